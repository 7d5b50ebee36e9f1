"""`crcr levels sync` from the command line: what it needs is named in one line."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_cli import crcr

from crcr.cli.levels import describe
from crcr.relay.levels.sync import SyncReport


def test_without_the_github_app_it_names_the_missing_setting(tmp_path: Path) -> None:
    allowlist = tmp_path / "allowlist.yml"
    allowlist.write_text("L2:\n  - a/b\n")
    result = crcr("levels", "sync", CRCR_ALLOWLIST=str(allowlist), CRCR_DATA_DIR=str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "crcr levels sync: CRCR_GITHUB_APP_ID: required to call GitHub"
    ]


def test_a_malformed_interval_stops_it_with_one_line() -> None:
    result = crcr("levels", "sync", CRCR_LEVELS_SYNC_INTERVAL="hourly")
    assert result.returncode == 2
    assert result.stderr.strip().startswith("crcr: CRCR_LEVELS_SYNC_INTERVAL: ")


def test_the_report_says_what_changed_or_that_nothing_did() -> None:
    report = SyncReport(opened=["o/a"], closed=["o/b"], skipped=["o/c: needs a device"])
    assert describe(report).splitlines() == [
        "opened: o/a",
        "closed: o/b",
        "skipped o/c: needs a device",
    ]
    assert describe(SyncReport(unchanged=["o/a"])) == "up to date: o/a\nnothing to change"

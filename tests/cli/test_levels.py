"""`crcr levels sync` from the command line: what it needs is named in one line."""

from __future__ import annotations

import json
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


def test_an_override_is_set_shown_audited_and_cleared(tmp_path: Path) -> None:
    allowlist = tmp_path / "allowlist.yml"
    allowlist.write_text("L1:\n  - a/one\nL4:\n  - a/critical: [oncall]\n")
    env = {"CRCR_ALLOWLIST": str(allowlist), "CRCR_DATA_DIR": str(tmp_path)}

    set_it = crcr(
        "levels", "override", "a/critical", "--level", "L2", "--for", "3d",
        "--reason", "runner fleet migration", "--by", "ops", **env,
    )  # fmt: skip
    assert set_it.returncode == 0, set_it.stderr
    assert set_it.stdout.startswith("a/critical treated as L2 until ")

    status = json.loads(crcr("levels", "status", "--json", **env).stdout)
    repos = {repo["repo"]: repo for repo in status["repos"]}
    assert set(repos) == {"a/one", "a/critical"}  # L1 included, from the allowlist
    critical = repos["a/critical"]
    assert critical["effectiveLevel"] == "L2"
    assert (critical["override"]["reason"], critical["override"]["by"]) == (
        "runner fleet migration",
        "ops",
    )
    audit = json.loads(crcr("audit", "--kind", "level", "--json", **env).stdout)
    assert [(e["decision"], e["subject"]) for e in audit] == [("override set", "ops")]

    cleared = crcr("levels", "override", "--clear", "a/critical", "--by", "ops", **env)
    assert cleared.stdout.strip() == "override of a/critical cleared"
    status = json.loads(crcr("levels", "status", "--json", **env).stdout)
    assert [repo["override"] for repo in status["repos"]] == [None, None]


def test_an_override_only_lowers_and_says_why_not(tmp_path: Path) -> None:
    allowlist = tmp_path / "allowlist.yml"
    allowlist.write_text("L2:\n  - a/two\n")
    env = {"CRCR_ALLOWLIST": str(allowlist), "CRCR_DATA_DIR": str(tmp_path)}
    refused = crcr(
        "levels", "override", "a/two", "--level", "L3", "--for", "1d", "--reason", "x", **env
    )
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines()[-1] == (
        "crcr levels override: a/two is at L2: an override only lowers"
    )

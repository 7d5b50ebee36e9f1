"""The `crcr` command line: every command documents itself, bad settings stop start-up."""

import os
import subprocess
import sys

import pytest

SETTINGS_FREE_ENV = {
    name: value
    for name, value in os.environ.items()
    if not name.startswith("CRCR_") and name != "CI"
}


def crcr(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "crcr", *args],
        capture_output=True,
        text=True,
        env={**SETTINGS_FREE_ENV, **env},
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("command", [[], ["serve"], ["sandbox"], ["sweep"], ["report"]])
def test_every_command_has_help(command: list[str]) -> None:
    result = crcr(*command, "--help")
    assert result.returncode == 0, result.stderr
    assert "Usage" in result.stdout


def test_serve_without_github_settings_names_what_is_missing() -> None:
    result = crcr("serve")
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert lines == [
        "crcr serve: missing required settings: CRCR_WEBHOOK_SECRET, CRCR_GITHUB_APP_ID, "
        "CRCR_GITHUB_APP_PRIVATE_KEY, CRCR_ALLOWLIST"
    ]


def test_a_malformed_setting_stops_start_up_with_one_line_naming_it() -> None:
    result = crcr("serve", CRCR_RATE_LIMIT_PER_MIN="lots", CRCR_WEBHOOK_SECRET="s3cret-value")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("crcr: CRCR_RATE_LIMIT_PER_MIN: ")
    assert "s3cret-value" not in result.stderr

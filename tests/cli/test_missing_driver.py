"""A `postgresql://` URL on an install without the `[postgres]` extra: one line naming the fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from crcr.config import cli_settings
from crcr.config.cli_settings import POSTGRES_DRIVER_MISSING, check_drivers
from crcr.config.settings import SettingsError, load_settings

PEM = "-----BEGIN RSA PRIVATE KEY-----\nx\n-----END RSA PRIVATE KEY-----"
URL = "postgresql://crcr@127.0.0.1:1/crcr"
# Runs the CLI as an install without psycopg does: the import system finds no such module.
WITHOUT_PSYCOPG = (
    "import sys; sys.modules['psycopg'] = None; sys.argv[0] = 'crcr'; "
    "from crcr.cli import main; main()"
)


def crcr_without_psycopg(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("CRCR_")}
    env |= {
        "CRCR_DATABASE_URL": URL,
        "CRCR_DATA_DIR": str(tmp_path),
        "CRCR_WEBHOOK_SECRET": "s3cret",
        "CRCR_GITHUB_APP_ID": "1",
        "CRCR_GITHUB_APP_PRIVATE_KEY": PEM,
        "CRCR_ALLOWLIST": str(tmp_path / "allowlist.yml"),
        "CRCR_LOG_FORMAT": "text",
    }
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_PSYCOPG, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("command", [["serve"], ["hud", "serve"], ["hud", "migrate"]])
def test_a_command_names_the_extra_in_one_line(tmp_path: Path, command: list[str]) -> None:
    done = crcr_without_psycopg(tmp_path, *command)

    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"crcr: {POSTGRES_DRIVER_MISSING}"]
    assert "Traceback" not in done.stdout + done.stderr


def test_version_still_prints_and_names_the_extra(tmp_path: Path) -> None:
    done = crcr_without_psycopg(tmp_path, "version")

    assert done.returncode == 0
    assert done.stdout.startswith("crcr ")
    assert done.stderr.strip() == f"crcr: stored data not read: {POSTGRES_DRIVER_MISSING}"


def test_the_check_passes_with_the_driver_or_without_postgresql(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    check_drivers(load_settings(data_dir=tmp_path, database_url=URL))
    check_drivers(load_settings(data_dir=tmp_path))
    monkeypatch.setattr(cli_settings, "find_spec", lambda name: None)
    check_drivers(load_settings(data_dir=tmp_path))

    with pytest.raises(SettingsError, match=r"pip install 'crcr\[postgres\]'"):
        check_drivers(load_settings(data_dir=tmp_path, database_url=URL))

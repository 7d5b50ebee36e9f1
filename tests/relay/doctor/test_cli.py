"""`crcr doctor OWNER/REPO` from the command line: its lines, next step and exit code."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from click.testing import Result
from typer.testing import CliRunner

from crcr.relay.doctor import cli as doctor_cli


def crcr(*args: str) -> Result:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """crcr (test harness)."""

    doctor_cli.register(app)
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def relay_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A relay configured with a file allowlist and SQLite state, without the App."""
    allowlist = tmp_path / "allowlist.yml"
    allowlist.write_text("L2:\n  - org/backend\n")
    monkeypatch.setenv("CRCR_ALLOWLIST", str(allowlist))
    monkeypatch.setenv("CRCR_DATA_DIR", str(tmp_path / "data"))
    for name in ("CRCR_REDIS_URL", "CRCR_GITHUB_APP_ID", "CRCR_GITHUB_APP_PRIVATE_KEY"):
        monkeypatch.delenv(name, raising=False)
    return allowlist


def test_every_check_gets_a_line_and_the_first_failure_its_next_step(relay_env: Path) -> None:
    result = crcr("doctor", "org/backend")

    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0] == "crcr doctor org/backend"
    assert lines[1] == f"  [  ok] allowlist entry   L2 as org/backend (from {relay_env})"
    assert lines[2] == "  [  ok] level             L2"
    assert lines[3].startswith("  [FAIL] App installed     cannot ask GitHub: CRCR_GITHUB_APP_ID")
    assert [line[3:7] for line in lines[1:8]] == [
        "  ok", "  ok", "FAIL", "FAIL", "FAIL", "FAIL", "  ok"
    ]  # fmt: skip
    assert lines[8] == (
        "next step (App installed): set the App's settings:"
        " CRCR_GITHUB_APP_ID, CRCR_GITHUB_APP_PRIVATE_KEY"
    )


def test_a_repo_not_on_the_allowlist_is_told_who_adds_it(relay_env: Path) -> None:
    result = crcr("doctor", "org/stranger")

    assert result.exit_code == 1
    assert result.stdout.splitlines()[1] == f"  [FAIL] allowlist entry   not in {relay_env}"
    assert "next step (allowlist entry): ask the maintainers of pytorch/pytorch" in result.stdout


def test_a_malformed_repo_is_refused() -> None:
    result = crcr("doctor", "not-a-repo")

    assert result.exit_code == 2
    assert "OWNER/REPO" in result.output

"""Tables printed by commands: whole into a pipe (`crcr audit | less`), plain with NO_COLOR."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from crcr.config.cli_settings import output_console
from crcr.relay.audit import cli as audit_cli
from crcr.relay.audit.entries import CallbackFacts, callback_entry
from crcr.stores.sqlite.state import SqliteStateStore

LONG_REPO = "a-rather-long-organisation/an-even-longer-downstream-backend"
REASON = "workflow.run_id: must be the token's run_id (the token says 123456789)"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def trail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A state store holding one refused callback with long names."""
    monkeypatch.setenv("CRCR_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("CRCR_REDIS_URL", raising=False)
    monkeypatch.delenv("COLUMNS", raising=False)
    facts = CallbackFacts(repo=LONG_REPO, subject=f"repo:{LONG_REPO}:ref:refs/heads/main")
    facts.described("d-1", f"d-1:{LONG_REPO}:123456789:1:build", "completed", "failure")
    entry = callback_entry(facts, 400, {"detail": REASON}, None)

    async def write() -> None:
        store = await SqliteStateStore.open(tmp_path / "state.db")
        await store.append_audit([entry], keep_seconds=86400, keep_per_repo=100)
        await store.close()

    asyncio.run(write())


@pytest.mark.usefixtures("trail")
def test_the_audit_table_piped_keeps_every_cell_whole() -> None:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """crcr (test harness)."""

    audit_cli.register(app)
    result = CliRunner().invoke(app, ["audit"])  # CliRunner's stdout is a pipe, not a TTY

    assert result.exit_code == 0, result.output
    assert LONG_REPO in result.stdout
    assert REASON in result.stdout
    assert "…" not in result.stdout


def test_no_color_prints_a_table_without_escape_codes(monkeypatch: pytest.MonkeyPatch) -> None:
    from rich.table import Table

    table = Table(title="t")
    table.add_column("[bold red]head[/]")
    table.add_row("[green]cell[/]")
    monkeypatch.delenv("NO_COLOR", raising=False)
    coloured = Terminal()
    output_console(coloured).print(table)
    monkeypatch.setenv("NO_COLOR", "1")
    plain = Terminal()
    output_console(plain).print(table)

    assert "\x1b[" in coloured.getvalue()  # the check can see escape codes
    assert "\x1b[" not in plain.getvalue() and "cell" in plain.getvalue()


def test_columns_still_wins_in_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    assert output_console(io.StringIO()).width == 100
    monkeypatch.delenv("COLUMNS")
    assert output_console(io.StringIO()).width > 1000

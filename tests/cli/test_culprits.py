"""`crcr culprits [--repo]` and `crcr bisect --repo --good --bad` (SPEC §14)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
import typer
from click.testing import Result
from typer.testing import CliRunner

from crcr.cli import culprits as culprits_cli
from crcr.relay.culprits.record import Bisection, Commit, Purpose, Step, Verdict
from crcr.stores.sqlite.state import SqliteStateStore

GOOD, CULPRIT, BAD = "a" * 40, "b" * 40, "c" * 40


def crcr(*args: str) -> Result:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """crcr (test harness)."""

    culprits_cli.register(app)
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "240"})


@pytest.fixture
def stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A relay's state store holding one confirmed bisection of org/xpu."""
    monkeypatch.setenv("CRCR_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("CRCR_REDIS_URL", raising=False)
    bisection = Bisection(
        repo="org/xpu",
        good=GOOD,
        bad=BAD,
        commits=(Commit(CULPRIT, "Fuse the reduction (#123)"), Commit(BAD, "Other (#124)")),
        started_at=time.time() - 600,
        verdict=Verdict.CONFIRMED,
        culprit=CULPRIT,
        confirmed=True,
        steps=(Step(1, 0, CULPRIT, "crcr-bisect-1", Purpose.CONFIRM, time.time(), "failure"),),
        ended_at=time.time(),
    )

    async def write() -> None:
        store = await SqliteStateStore.open(tmp_path / "state.db")
        await store.create_bisection(bisection.key, bisection.to_store())
        await store.close()

    asyncio.run(write())


@pytest.mark.usefixtures("stored")
def test_culprits_lists_each_bisection_with_its_culprit_and_steps() -> None:
    result = crcr("culprits")

    assert result.exit_code == 0, result.output
    assert "org/xpu: confirmed — 2 commit(s)" in result.output
    assert f"culprit: {CULPRIT} Fuse the reduction (#123) — confirmed" in result.output
    assert "step 1 (confirm): bbbbbbbbbbbb → failure" in result.output


@pytest.mark.usefixtures("stored")
def test_culprits_of_another_backend_says_there_are_none() -> None:
    result = crcr("culprits", "--repo", "org/other")

    assert result.exit_code == 0, result.output
    assert result.output.strip() == "no bisections for org/other"


def test_bisect_wants_full_shas() -> None:
    result = crcr("bisect", "--repo", "org/xpu", "--good", "abc123", "--bad", BAD)

    assert result.exit_code == 2
    assert "--good must be a full 40-character SHA" in result.output

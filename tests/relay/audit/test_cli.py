"""`crcr audit [--repo R] [--since T] [--refused] [--kind K] [--json]` (SPEC §12)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
import typer
from click.testing import Result
from typer.testing import CliRunner

from crcr.relay.audit import cli as audit_cli
from crcr.relay.audit.entries import UNAUTHENTICATED, CallbackFacts, callback_entry, dispatch_entry
from crcr.stores.sqlite.state import SqliteStateStore

NOW = time.time()


def crcr(*args: str) -> Result:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """crcr (test harness)."""

    audit_cli.register(app)
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "240"})


def decision(repo: str, status: int, body: dict[str, Any], ago: float) -> dict[str, Any]:
    facts = CallbackFacts(
        repo=repo, subject=f"repo:{repo}:ref:refs/heads/main", issuer="https://i", listed=True
    )
    facts.described("d-1", f"d-1:{repo}:9001:1:test", "in_progress", None)
    return callback_entry(facts, status, body, None, at=NOW - ago)


@pytest.fixture
def trail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A relay's state store holding a few decisions of two repos."""
    monkeypatch.setenv("CRCR_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("CRCR_REDIS_URL", raising=False)
    entries = [
        decision("org/a", 200, {"ok": True}, ago=7200),
        decision("org/a", 409, {"detail": "conflicting repeat"}, ago=60),
        {**dispatch_entry("org/b", "d-9", "sent", None), "at": NOW - 30},
        {**callback_entry(CallbackFacts(), 401, {"detail": "token has expired"}, None), "at": NOW},
    ]

    async def write() -> None:
        store = await SqliteStateStore.open(tmp_path / "state.db")
        await store.append_audit(entries, keep_seconds=86400, keep_per_repo=100)
        await store.close()

    asyncio.run(write())


def printed(result: Result) -> list[dict[str, Any]]:
    assert result.exit_code == 0, result.output
    entries: list[dict[str, Any]] = json.loads(result.stdout)
    return entries


@pytest.mark.usefixtures("trail")
def test_json_lists_every_entry_newest_first_with_its_time() -> None:
    entries = printed(crcr("audit", "--json"))

    assert [(e["bucket"], e["kind"], e.get("status")) for e in entries] == [
        (UNAUTHENTICATED, "callback", 401),
        ("org/b", "dispatch", None),
        ("org/a", "callback", 409),
        ("org/a", "callback", 200),
    ]
    assert entries[2]["reason"] == "conflicting repeat"
    assert entries[2]["time"].endswith("+00:00")


@pytest.mark.usefixtures("trail")
def test_filters_by_repo_time_refusal_and_kind() -> None:
    assert len(printed(crcr("audit", "--json", "--repo", "ORG/A"))) == 2
    assert [e.get("status") for e in printed(crcr("audit", "--json", "--since", "1h"))] == [
        401,
        None,
        409,
    ]
    assert [e["status"] for e in printed(crcr("audit", "--json", "--refused"))] == [401, 409]
    assert [e["kind"] for e in printed(crcr("audit", "--json", "--kind", "dispatch"))] == [
        "dispatch"
    ]
    assert len(printed(crcr("audit", "--json", "--limit", "1"))) == 1


@pytest.mark.usefixtures("trail")
def test_the_table_shows_who_what_and_why() -> None:
    result = crcr("audit", "--repo", "org/a")

    assert result.exit_code == 0, result.output
    assert "org/a" in result.stdout and "conflicting repeat" in result.stdout
    assert "409" in result.stdout and "accepted" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [(("--since", "yesterday"), "--since"), (("--kind", "webhook"), "--kind")],
)
def test_bad_options_are_refused_naming_the_option(args: tuple[str, ...], message: str) -> None:
    result = crcr("audit", *args)

    assert result.exit_code == 2
    assert message in result.output


def test_since_takes_ages_and_iso_times() -> None:
    assert audit_cli.parse_since("2h", now=10_000.0) == 10_000.0 - 7200
    assert audit_cli.parse_since("1970-01-01T01:00:00") == 3600.0
    assert audit_cli.parse_since("1970-01-01T01:00:00+01:00") == 0.0

"""End to end into the real results store: callbacks through the relay to the in-process
HUD (SQLite), as `crcr serve` runs them. The row is what the dashboard will show.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import (
    Clock,
    Relay,
    StandInHud,
    StoreOpener,
    build_relay,
    callback_body,
    outside_world,
)

from crcr.hud.db import create_results_engine, migrate
from crcr.hud.models import JobExecution
from crcr.hud.write import ingest
from crcr.hud.write.ingest import HudIngestor
from crcr.relay.results.forwarder import InProcessHudTransport
from crcr.sandbox.oidc_issuer import SandboxIssuer

opener, signing_key, issuer = harness.opener, harness.signing_key, harness.issuer

NIGHTLY_SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    created = create_results_engine(f"sqlite:///{tmp_path / 'hud.db'}")
    migrate(created)
    yield created
    created.dispose()


@pytest.fixture
async def relay(
    opener: StoreOpener, issuer: SandboxIssuer, engine: Engine, tmp_path: Path
) -> AsyncIterator[Relay]:
    """A relay writing to the HUD in process; the HTTP one beside it is never reached."""
    store = await opener.open()
    transport = InProcessHudTransport(HudIngestor(engine))
    unused = StandInHud(tmp_path / "unused-hud.db")
    async with unused, outside_world(issuer, unused) as http:
        built = await build_relay(store, unused, issuer, Clock(), http, transport=transport)
        async with built.client:
            yield built
    await store.close()


def rows(engine: Engine) -> list[Any]:
    with engine.connect() as connection:
        return list(connection.execute(select(JobExecution.__table__)).mappings())


async def test_a_job_reported_through_the_relay_lands_in_the_results_store(
    relay: Relay, engine: Engine
) -> None:
    await relay.dispatch("d-1")
    relay.clock.advance(4.25)
    await relay.post(callback_body("d-1"))
    relay.clock.advance(90)

    response = await relay.post(callback_body("d-1", "completed", "failure"))

    assert response.json() == {"status": "accepted"}
    (row,) = rows(engine)
    assert row["downstream_repo"] == "org2/l2-backend"
    assert row["downstream_repo_level"] == "L2"
    assert (row["upstream_repo"], row["pr_number"], row["head_sha"]) == (
        "pytorch/pytorch",
        123,
        "a" * 40,
    )
    assert (row["status"], row["conclusion"]) == ("completed", "failure")
    assert (row["queue_time"], row["execution_time"]) == (4.25, 90.0)


async def test_a_zombie_lands_as_timed_out_and_the_late_truth_replaces_it(
    relay: Relay, engine: Engine
) -> None:
    await relay.dispatch("d-1")
    await relay.post(callback_body("d-1"))
    relay.clock.advance(relay.settings.zombie_timeout + 1)

    await relay.sweeper.sweep_once()
    (timed_out,) = rows(engine)
    relay.clock.advance(5)
    await relay.post(callback_body("d-1", "completed", "success"))
    (late,) = rows(engine)

    assert (timed_out["status"], timed_out["conclusion"]) == ("completed", "timed_out")
    assert (late["status"], late["conclusion"]) == ("completed", "success")


async def test_a_nightly_self_report_is_stored_against_the_tested_commit(
    relay: Relay, engine: Engine
) -> None:
    body = callback_body(NIGHTLY_SHA, "completed", "success", event_type="nightly")

    response = await relay.post(body)

    assert response.json() == {"status": "accepted"}
    (row,) = rows(engine)
    assert (row["event_type"], row["head_sha"], row["pr_number"]) == ("nightly", NIGHTLY_SHA, 0)


async def test_the_hud_in_process_is_handed_the_checked_report_not_a_body_to_parse(
    relay: Relay, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed: list[object] = []
    monkeypatch.setattr(ingest, "parse_result_body", lambda *a, **k: parsed.append(a))
    await relay.dispatch("d-1")

    await relay.post(callback_body("d-1"))
    await relay.post(callback_body("d-1", "completed", "failure"))
    await relay.post(callback_body(NIGHTLY_SHA, "completed", "success", event_type="nightly"))

    assert parsed == []  # the relay's schema was the one parse
    assert sorted((row["event_type"], row["conclusion"]) for row in rows(engine)) == [
        ("nightly", "success"),
        ("pull_request", "failure"),
    ]


async def test_a_token_spelling_the_repository_otherwise_reports_on_the_same_backend_and_job(
    relay: Relay, engine: Engine
) -> None:
    """Issue 33 item 21: a case-variant token made a second backend (and a second job key)."""
    await relay.dispatch("d-1")
    shouting = "ORG2/L2-Backend"
    await relay.post(callback_body("d-1"), repo=shouting)

    completed = await relay.post(callback_body("d-1", "completed", "failure"), repo=shouting)
    again = await relay.post(callback_body("d-1", "completed", "failure"))

    assert (completed.json(), again.json()) == ({"status": "accepted"}, {"status": "duplicate"})
    assert [row["downstream_repo"] for row in rows(engine)] == ["org2/l2-backend"]

"""Forwarding SPEC §6 bodies: to the in-process HUD (a real results store on SQLite) or
over HTTP; HUD refusals go back to the caller, HUD trouble goes to the retry queue.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, select
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from crcr.config.settings import Settings
from crcr.hud.db import create_results_engine, migrate
from crcr.hud.models import JobExecution
from crcr.hud.write.ingest import HudIngestor
from crcr.relay.jobs.expectation import HudExpectation
from crcr.relay.jobs.lifecycle import JobState
from crcr.relay.results.body import build_hud_body
from crcr.relay.results.forwarder import (
    HUD_QUEUE,
    Delivery,
    HttpHudTransport,
    HudForwarder,
    InProcessHudTransport,
    forwarder_from_settings,
)
from crcr.stores.sqlite.state import SqliteStateStore
from crcr.stores.state import StateStore

URL = "http://hud.test/api/crcr/results"


EXPECT = HudExpectation("k", JobState.IN_PROGRESS, None)


def hud_body(status: str = "in_progress", conclusion: str | None = None, **trusted: Any) -> Any:
    return build_hud_body(
        verified_repo="org2/l2-backend",
        level="L2",
        queue_time=trusted.pop("queue_time", 1.5),
        execution_time=trusted.pop("execution_time", None),
        dispatch={
            "upstream_repo": "pytorch/pytorch",
            "event_type": "pull_request",
            "head_sha": "a" * 40,
            "pr_number": 7,
        },
        callback_payload={
            "event_type": "pull_request",
            "delivery_id": "d-1",
            "payload": {},
            "workflow": {
                "status": status,
                "conclusion": conclusion,
                "name": "crcr",
                "run_id": "9001",
                "run_attempt": "1",
                "job_name": "test",
                "check_run_id": "456",
                "started_at": "2026-01-01T00:00:00Z",
            },
        },
    )


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[StateStore]:
    opened = await SqliteStateStore.open(tmp_path / "state.db")
    yield opened
    await opened.close()


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    created = create_results_engine(f"sqlite:///{tmp_path / 'hud.db'}")
    migrate(created)
    yield created
    created.dispose()


def jobs(engine: Engine) -> list[JobExecution]:
    with engine.connect() as connection:
        return list(connection.execute(select(JobExecution)).all())  # type: ignore[arg-type]


class ScriptedHud:
    """An HTTP HUD answering a scripted sequence of statuses, recording what it got."""

    def __init__(self, *statuses: int) -> None:
        self.statuses = list(statuses)
        self.requests: list[dict[str, Any]] = []
        self.app = Starlette(routes=[Route("/api/crcr/results", self.ingest, methods=["POST"])])

    async def ingest(self, request: Request) -> JSONResponse:
        self.requests.append({"headers": dict(request.headers), "body": await request.json()})
        status = self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
        return JSONResponse({"error": f"scripted {status}"}, status)


async def forward_over_http(store: StateStore, hud: ScriptedHud) -> Any:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=hud.app)) as http:
        forwarder = HudForwarder(
            HttpHudTransport(URL, "hud-secret", http, retry_delay=0.01), store, timeout=2.0
        )
        return await forwarder.forward(hud_body(), expect=EXPECT)


# --- in process --------------------------------------------------------------------


async def test_the_in_process_hud_stores_the_row(store: StateStore, engine: Engine) -> None:
    forwarder = HudForwarder(InProcessHudTransport(HudIngestor(engine)), store, timeout=2.0)

    started = await forwarder.forward(hud_body())
    finished = await forwarder.forward(hud_body("completed", "success", execution_time=42.0))

    assert started.delivery is finished.delivery is Delivery.DELIVERED
    (row,) = jobs(engine)
    assert (row.status, row.conclusion, row.head_sha, row.pr_number) == (
        "completed",
        "success",
        "a" * 40,
        7,
    )
    assert (row.queue_time, row.execution_time) == (1.5, 42.0)


async def test_an_in_process_refusal_is_passed_on_and_not_queued(
    store: StateStore, engine: Engine
) -> None:
    forwarder = HudForwarder(InProcessHudTransport(HudIngestor(engine)), store, timeout=2.0)

    result = await forwarder.forward(hud_body("completed", "Not A Conclusion!"))

    assert (result.delivery, result.status_code) == (Delivery.REJECTED, 400)
    assert "conclusion" in result.message
    assert (await store.queue_stats(HUD_QUEUE)).depth == 0


async def test_an_in_process_failure_is_queued(store: StateStore, engine: Engine) -> None:
    engine.dispose()
    broken = create_results_engine("sqlite:////nonexistent-dir/cannot/hud.db")
    forwarder = HudForwarder(InProcessHudTransport(HudIngestor(broken)), store, timeout=2.0)

    result = await forwarder.forward(hud_body())

    assert (result.delivery, result.status_code) == (Delivery.QUEUED, 202)
    (item,) = await store.lease(HUD_QUEUE, lease_seconds=5)
    assert item.payload["body"] == hud_body()


# --- over HTTP ---------------------------------------------------------------------


async def test_http_forwarding_sends_the_shared_secret(store: StateStore) -> None:
    hud = ScriptedHud(200)

    result = await forward_over_http(store, hud)

    assert result.delivery is Delivery.DELIVERED
    assert hud.requests[0]["headers"]["x-hud-internal-bot"] == "hud-secret"
    assert hud.requests[0]["body"] == hud_body()


async def test_a_hud_5xx_is_retried_once_then_succeeds(store: StateStore) -> None:
    hud = ScriptedHud(502, 200)

    result = await forward_over_http(store, hud)

    assert result.delivery is Delivery.DELIVERED
    assert len(hud.requests) == 2


async def test_a_persistent_hud_5xx_queues_the_body_with_what_it_stands_for(
    store: StateStore,
) -> None:
    result = await forward_over_http(store, ScriptedHud(503))

    assert (result.delivery, result.status_code) == (Delivery.QUEUED, 202)
    (item,) = await store.lease(HUD_QUEUE, lease_seconds=5)
    assert item.payload == {
        "body": hud_body(),
        "expect": {"job_key": "k", "state": "IN_PROGRESS", "conclusion": None},
    }


@pytest.mark.parametrize("status", [400, 413, 422])
async def test_a_hud_4xx_is_the_callers_answer(store: StateStore, status: int) -> None:
    result = await forward_over_http(store, ScriptedHud(status))

    assert (result.delivery, result.status_code) == (Delivery.REJECTED, status)
    assert result.message == f'{{"error":"scripted {status}"}}'


@pytest.mark.parametrize("status", [401, 403, 429])
async def test_a_hud_refusal_that_is_not_the_callers_fault_is_queued(
    store: StateStore, status: int
) -> None:
    result = await forward_over_http(store, ScriptedHud(status))

    assert result.delivery is Delivery.QUEUED


async def test_an_unreachable_hud_is_queued(store: StateStore) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with httpx.AsyncClient() as http:
        transport = HttpHudTransport(f"http://127.0.0.1:{port}/api/crcr/results", None, http)
        forwarder = HudForwarder(transport, store, timeout=1.0)

        result = await forwarder.forward(hud_body())

    assert result.delivery is Delivery.QUEUED
    assert (await store.queue_stats(HUD_QUEUE)).depth == 1


async def test_queueing_the_same_body_twice_keeps_one_copy(store: StateStore) -> None:
    await forward_over_http(store, ScriptedHud(503))
    await forward_over_http(store, ScriptedHud(503))

    assert (await store.queue_stats(HUD_QUEUE)).depth == 1


# --- choosing the transport ------------------------------------------------------


async def test_settings_choose_http_when_a_hud_url_is_set(store: StateStore) -> None:
    async with httpx.AsyncClient() as http:
        remote = forwarder_from_settings(Settings(hud_url=URL), store, http=http)
        with pytest.raises(ValueError, match="CRCR_HUD_URL"):
            forwarder_from_settings(Settings(hud_url=None), store, http=http)

    assert isinstance(remote.transport, HttpHudTransport)

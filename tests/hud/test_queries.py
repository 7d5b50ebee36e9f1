"""Heavy window reads are shared and bounded: a crowd costs one read, polls never wait.

Issue 33 item 17: `/api/crcr/metrics?days=90` was read anew by every caller; 40 at once
ran 40 reads, took every worker thread and held `/api/crcr/freshness` for seconds.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from pydantic import SecretStr
from sqlalchemy import Engine
from tests.hud.hud_bodies import our_body
from tests.waiting import eventually

from crcr.hud import queries
from crcr.hud.component import Hud, mount_hud
from crcr.hud.queries import HudQueries
from crcr.hud.reads.latency import LatencyPoint, read_latency
from crcr.hud.reads.shared import SharedReads
from crcr.hud.write.ingest import HudIngestor

TOKEN = "hud-secret"
CROWD = 40


class GatedLatency:
    """The real latency read, counted, each call held until the test opens the gate."""

    def __init__(self) -> None:
        self.calls = 0
        self.waiting = 0
        self.gate = threading.Event()

    def __call__(self, engine: Engine, window: int, now: datetime | None) -> Any:
        self.calls += 1
        self.waiting += 1
        self.gate.wait(timeout=60)
        self.waiting -= 1
        answer: tuple[LatencyPoint, ...] = read_latency(engine, window, now)
        return answer


@pytest.fixture
def gated(monkeypatch: pytest.MonkeyPatch) -> GatedLatency:
    gate = GatedLatency()
    monkeypatch.setattr(queries, "read_latency", gate)
    return gate


@pytest.fixture
async def client(engine: Engine) -> AsyncIterator[httpx.AsyncClient]:
    app = FastAPI()
    app.state.hud = Hud(
        engine=engine,
        ingestor=HudIngestor(engine),
        queries=HudQueries(engine),
        token=SecretStr(TOKEN),
        retention_days=90,
    )
    mount_hud(app)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://hud") as http:
        yield http


async def ingest(client: httpx.AsyncClient, delivery: str) -> None:
    body = our_body(delivery_id=delivery)
    answer = await client.post(
        "/api/crcr/results", json=body, headers={"x-hud-internal-bot": TOKEN}
    )
    assert answer.status_code == 200, answer.text


async def test_a_crowd_asking_for_metrics_costs_one_read_and_polls_never_wait(
    client: httpx.AsyncClient, gated: GatedLatency
) -> None:
    await ingest(client, "d-1")

    crowd = [
        asyncio.ensure_future(client.get("/api/crcr/metrics", params={"days": 90}))
        for _ in range(CROWD)
    ]
    await eventually(lambda: gated.waiting >= 1, what="the first metrics read to start")
    poll = await asyncio.wait_for(client.get("/api/crcr/freshness"), timeout=10)
    gated.gate.set()
    answers = await asyncio.gather(*crowd)

    assert poll.status_code == 200
    assert {a.status_code for a in answers} == {200}
    assert len({a.text for a in answers}) == 1
    assert gated.calls == 1
    again = await client.get("/api/crcr/metrics", params={"days": 90})
    assert again.text == answers[0].text and gated.calls == 1
    await ingest(client, "d-2")  # a new result: the next caller reads again
    assert (await client.get("/api/crcr/metrics", params={"days": 90})).status_code == 200
    assert gated.calls == 2


async def test_a_failed_read_is_not_kept() -> None:
    reads = SharedReads()
    failures = 0

    def failing() -> None:
        nonlocal failures
        failures += 1
        raise RuntimeError("the store went away")

    key = reads.key(("latency", 90), "v")
    for _ in range(2):
        with pytest.raises(RuntimeError):
            await reads.shared(key, failing)
    assert failures == 2

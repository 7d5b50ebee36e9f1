"""Alerts on transitions over the sandbox (SPEC §13), two relay instances on one store.

A backend passes on the default branch, then fails ten times in a row, then recovers,
while two instances' alert watches take turns (and race) after every result: exactly
one alert on passing → failing and one on recovery. The webhook sink receives them
through the `alerts` retry queue, signed as GitHub signs its webhooks.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import StoreOpener
from tests.relay.checks_harness import (
    L3_REPO,
    World,
    installed_sandbox,
    open_world,
    sandbox_app,
)

from crcr.hud.health.memo import HealthMemo
from crcr.relay.alerts.sinks import ALERT_QUEUE, AlertSinks, alert_queue_handler
from crcr.relay.alerts.watch import AlertWatch
from crcr.sandbox.github_identity import SandboxApp

opener, signing_key, sandbox_app = harness.opener, harness.signing_key, sandbox_app

SECRET = "alert-signing-secret"
HOOK = "https://alerts.example.org/hook?token=sink-token"
SLACK = "https://hooks.slack.example/services/T0/B0/slack-token"
START = datetime(2026, 11, 27, 8, tzinfo=UTC)


class Sink:
    """A recording alert receiver: every request's URL, headers and body."""

    def __init__(self) -> None:
        self.received: list[tuple[str, dict[str, str], bytes]] = []

        async def receive(request: Request) -> Response:
            self.received.append((str(request.url), dict(request.headers), await request.body()))
            return Response(status_code=204)

        app = Starlette(routes=[Route("/{path:path}", receive, methods=["POST"])])
        self.client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app))

    def at(self, url: str) -> list[tuple[dict[str, str], bytes]]:
        return [(headers, body) for to, headers, body in self.received if to == url]


@pytest.fixture
async def world(
    opener: StoreOpener, tmp_path: Path, sandbox_app: SandboxApp, signing_key: harness.SigningKey
) -> AsyncIterator[World]:
    sandbox = installed_sandbox(sandbox_app)
    async with open_world(
        opener,
        tmp_path,
        sandbox,
        signing_key,
        alert_webhook=HOOK,
        alert_secret=SECRET,
        alert_slack_url=SLACK,
        hud_public_url="https://hud.example.org",
    ) as opened:
        opened.runtime.sweeper.extra_steps.clear()
        yield opened


@pytest.fixture
async def sink(world: World) -> AsyncIterator[Sink]:
    """The sinks' far end; the relay's alert queue posts to it."""
    recording = Sink()
    sinks = AlertSinks.from_settings(world.runtime.settings)
    world.runtime.sweeper.queue_handlers[ALERT_QUEUE] = alert_queue_handler(sinks, recording.client)
    yield recording
    await recording.client.aclose()


async def second_instance(world: World, opener: StoreOpener) -> AsyncIterator[AlertWatch]:
    """Another relay's alert watch: its own store connection and health memo."""
    store = await opener.open()
    assert world.runtime.alerts is not None and world.runtime.health is not None
    try:
        health = replace(world.runtime.health, store=store)
        yield replace(
            world.runtime.alerts, store=store, memo=HealthMemo(health.report), instance="b"
        )
    finally:
        await store.close()


async def push_result(world: World, n: int, conclusion: str) -> None:
    """Push number `n` upstream; the backend's job on it completes with `conclusion`."""
    delivery = await world.push(f"{n:040x}")
    finished = (START + timedelta(minutes=n)).isoformat().replace("+00:00", "Z")
    for status, concluded in (("in_progress", None), ("completed", conclusion)):
        body = world.callback_body(L3_REPO, delivery, status, concluded, run_id=1000 + n)
        if concluded:
            body["workflow"]["completed_at"] = finished
        answer = await world.post_callback(L3_REPO, body)
        assert answer.status_code == 200, answer.text


async def test_one_alert_on_failing_and_one_on_recovery_across_two_instances(
    world: World, opener: StoreOpener, sink: Sink
) -> None:
    assert world.runtime.alerts is not None
    first = world.runtime.alerts
    async for other in second_instance(world, opener):
        for n in range(3):
            await push_result(world, n, "success")
        assert await first.check() == []  # a first state: no alert
        raised = []
        for n in range(3, 13):
            await push_result(world, n, "failure")
            both = await asyncio.gather(first.check(), other.check())  # racing
            raised += [alert for alerts in both for alert in alerts]
            raised += await (first if n % 2 else other).check()  # taking turns
        await push_result(world, 13, "success")
        raised += await other.check()
        raised += await first.check()

    mine = [a for a in raised if a.repo == L3_REPO]
    assert [(a.kind, a.before, a.after) for a in mine] == [
        ("backend_state", "passing", "failing"),
        ("backend_state", "failing", "passing"),
    ]
    listed = (await world.client.get("/api/crcr/alerts")).json()["alerts"]
    assert [(a["repo"], a["from"], a["to"]) for a in listed] == [
        (L3_REPO, "failing", "passing"),
        (L3_REPO, "passing", "failing"),
    ]
    assert listed[0]["url"] == f"https://hud.example.org/crcr/{L3_REPO}"
    page = (await world.client.get("/crcr/alerts")).text
    assert page.count(f'data-alert="backend" data-repo="{L3_REPO}"') == 2
    assert page.index('data-to="passing"') < page.index('data-to="failing"')  # newest first
    assert 'href="/crcr/alerts"' in (await world.client.get("/crcr/health")).text

    await world.settle()
    hooks = sink.at(HOOK)
    assert len(hooks) == 2 and len(sink.at(SLACK)) == 2
    for headers, body in hooks:
        expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        assert hmac.compare_digest(headers["x-crcr-signature-256"], expected)
        assert set(json.loads(body)) == {"kind", "repo", "from", "to", "at", "url"}
    assert "failing" in json.loads(sink.at(SLACK)[0][1])["text"]


async def test_neither_the_alert_log_nor_metrics_show_a_sink_url_or_secret(
    world: World, opener: StoreOpener, sink: Sink
) -> None:
    assert world.runtime.alerts is not None
    for n in range(4):
        await push_result(world, n, "success" if n == 0 else "failure")
        await world.runtime.alerts.check()
    answers = [
        await world.client.get("/api/crcr/alerts"),
        await world.client.get("/metrics"),
        await world.client.get("/api/crcr/health"),
        await world.client.get("/crcr/alerts"),
    ]
    assert 'crcr_alerts_total{kind="backend_state",to="failing"}' in answers[1].text
    for answer in answers:
        for secret in (SECRET, "sink-token", "slack-token"):
            assert secret not in answer.text

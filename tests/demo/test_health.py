"""The demo's relay health: the canary makes it Healthy, the failing backend alerts once.

The demo runs 200 times faster than life, which floods its sweeper's queues; so the
test takes the leader's two steps itself — the alert watch, then the `alerts` queue's
delivery — whenever it looks, rather than waiting for a pass to reach them.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from anyio import to_thread
from tests.waiting import eventually

from crcr.demo.backends import DEGRADING_BACKEND
from crcr.demo.health import CANARY_REPO, AlertReceiver
from crcr.demo.options import DemoOptions
from crcr.demo.stack import DemoStack
from crcr.hud.health.rows import recent_completed_jobs
from crcr.relay.alerts.alert import SIGNATURE_HEADER, alert_text, encode, signature
from crcr.relay.alerts.sinks import ALERT_QUEUE
from crcr.relay.jobs.queue_handler import HandlerResult
from crcr.runtime import Runtime

FAILING = f"backend {DEGRADING_BACKEND} is failing (was passing)"


async def watch_and_deliver(runtime: Runtime) -> None:
    """The leader's alert watch, then the alerts queue drained to the demo's sink."""
    assert runtime.alerts is not None
    await runtime.alerts.check()
    handler = runtime.sweeper.queue_handlers[ALERT_QUEUE]
    for item in await runtime.store.lease(ALERT_QUEUE, lease_seconds=30):
        if await handler(item) is HandlerResult.DONE:
            await runtime.store.ack(ALERT_QUEUE, item.item_id, item.lease_token)


async def failed_pushes(runtime: Runtime) -> int:
    assert runtime.hud is not None
    engine, push = runtime.hud.engine, frozenset({"push"})
    jobs = await to_thread.run_sync(
        lambda: recent_completed_jobs(engine, DEGRADING_BACKEND, 25, push)
    )
    return sum(job.conclusion == "failure" for job in jobs)


@pytest.mark.slow  # a whole demo: relay, HUD, sandbox, simulated CI and the canary
async def test_the_canary_shows_healthy_and_the_failing_backend_alerts_exactly_once(
    tmp_path: Path,
) -> None:
    options = DemoOptions(
        port=0, data_dir=tmp_path, speed=200.0, rate=120.0, seed=5, history_days=0,
        degrade_after=3.0,
    )  # fmt: skip
    stack = DemoStack(options)
    await stack.start()
    try:
        assert stack._relay_app is not None
        runtime: Runtime = stack._relay_app.state.runtime
        await watch_and_deliver(runtime)  # its passing start is on record before it degrades
        health_url = stack.dashboard_url.replace("/crcr", "/api/crcr/health")
        async with httpx.AsyncClient() as client:

            async def healthy() -> bool:
                document = (await client.get(health_url)).json()
                return bool(document["status"] == "healthy" and document["canary"] == CANARY_REPO)

            await eventually(healthy, within=60, what="the canary's probes to pass")

        async def alerted() -> bool:
            await watch_and_deliver(runtime)
            return FAILING in stack.health.receiver.lines

        await eventually(alerted, within=60, what="the failing alert at the demo's sink")
        before = await failed_pushes(runtime)

        async def failed_again() -> bool:
            return await failed_pushes(runtime) >= before + 2

        await eventually(failed_again, within=60, what="more of its jobs failing")
        await watch_and_deliver(runtime)
        lines = stack.health.receiver.lines
        progress = await stack.progress()
    finally:
        await stack.stop()
    # One alert of its state (a culprit search of its break may add its verdict).
    assert [line for line in lines if line.startswith(f"backend {DEGRADING_BACKEND} is")] == [
        FAILING
    ]
    assert progress.alerts == lines and stack.health.receiver.refused == 0


async def test_the_sink_keeps_only_signed_alerts() -> None:
    receiver = AlertReceiver("demo-secret")
    body = {"kind": "canary", "repo": CANARY_REPO, "from": "healthy", "to": "degraded"}
    raw = encode(body)
    transport = httpx.ASGITransport(app=receiver.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://sink") as client:
        signed = {SIGNATURE_HEADER: signature(b"demo-secret", raw)}
        assert (await client.post("/alerts", content=raw, headers=signed)).status_code == 204
        redelivered = await client.post("/alerts", content=raw, headers=signed)
        assert redelivered.status_code == 204  # at least once: kept once
        forged = {SIGNATURE_HEADER: signature(b"another-secret", raw)}
        assert (await client.post("/alerts", content=raw, headers=forged)).status_code == 401
        assert (await client.post("/alerts", content=raw)).status_code == 401
    assert receiver.lines == (alert_text(body),)
    assert alert_text(body) == f"canary {CANARY_REPO} is degraded (was healthy)"
    assert receiver.refused == 2


def test_the_view_and_the_closing_lines_show_the_alerts_received() -> None:
    from tests.demo.test_view import frame, rendered

    from crcr.demo.view import closing_lines

    progress = frame(alerts=(FAILING,))
    assert FAILING in rendered(progress) and "/crcr/alerts" in rendered(progress)
    assert f"Alert received by the demo's sink: {FAILING} (see /crcr/alerts)." in closing_lines(
        progress, "crcr-data"
    )
    assert "Alerts" not in rendered(frame())

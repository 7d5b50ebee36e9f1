"""Callbacks when things break: the state store, the HUD, the relay itself.

The promises: fail closed with nothing half-written when the store is gone; answer
202 and lose nothing when the HUD is gone, even across a relay restart; never show a
stack trace or a secret.
"""

from __future__ import annotations

import socket
import time

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

from crcr.relay.hud_forwarder import HUD_QUEUE
from crcr.sandbox.oidc_issuer import SandboxIssuer
from crcr.stores.redis_state import RedisStateStore

opener, signing_key, issuer = harness.opener, harness.signing_key, harness.issuer
relay = harness.relay


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"redis://127.0.0.1:{port}/0"


async def test_an_unreachable_store_fails_closed_with_503(issuer: SandboxIssuer) -> None:
    hud = StandInHud()
    dead = RedisStateStore.from_url(closed_port_url(), timeout=0.2)
    async with outside_world(issuer, hud) as http:
        built = await build_relay(dead, hud, issuer, Clock(), http)
        async with built.client:
            response = await built.post(callback_body("d-1"))

    assert response.status_code == 503
    assert response.headers["retry-after"]
    assert "unavailable" in response.json()["error"]
    assert hud.writes == 0
    await dead.close()


async def test_a_store_lost_after_the_token_check_writes_nothing(relay: Relay) -> None:
    await relay.dispatch("d-1")
    assert (await relay.post(callback_body("d-1", job_name="warm-up"))).status_code == 200
    writes = relay.hud.writes
    dead = RedisStateStore.from_url(closed_port_url(), timeout=0.2)
    relay.deps.store = dead  # the verifier's JWKS cache still answers; nothing else does

    response = await relay.post(callback_body("d-1"))

    assert response.status_code == 503
    assert relay.hud.writes == writes
    await dead.close()


async def test_a_hud_4xx_is_passed_to_the_caller(relay: Relay) -> None:
    await relay.dispatch("d-1")
    await relay.post(callback_body("d-1"))

    response = await relay.post(callback_body("d-1", "completed", "rejected-by-hud"))

    assert response.status_code == 422
    assert "conclusion" in response.json()["error"]
    assert (await relay.store.queue_stats(HUD_QUEUE)).depth == 0


async def test_a_slow_hud_costs_the_caller_no_more_than_the_budget(relay: Relay) -> None:
    await relay.dispatch("d-1")
    relay.deps.forward_budget = 0.3
    relay.hud.delay = 30.0
    started = time.monotonic()

    response = await relay.post(callback_body("d-1"))

    assert response.status_code == 202
    assert time.monotonic() - started < 2.0
    assert (await relay.store.queue_stats(HUD_QUEUE)).depth == 1


async def test_hud_down_answers_202_and_the_row_arrives_after_a_restart(
    opener: StoreOpener, issuer: SandboxIssuer
) -> None:
    hud = StandInHud()
    clock = Clock()
    async with outside_world(issuer, hud) as http:
        store = await opener.open()
        first = await build_relay(store, hud, issuer, clock, http)
        await first.dispatch("d-1")
        await first.post(callback_body("d-1"))
        hud.down = True

        response = await first.post(callback_body("d-1", "completed", "failure"))

        assert (response.status_code, response.json()) == (202, {"status": "queued"})
        assert hud.only_row()["status"] == "in_progress"
        still_down = await first.sweeper.sweep_once()
        assert still_down.handled[HUD_QUEUE] == {"retry": 1}
        await first.client.aclose()
        await store.close()

        # A new relay process on the same state: the queued write survives it.
        hud.down = False
        reopened = await opener.open()
        second = await build_relay(reopened, hud, issuer, clock, http)
        report = await second.sweeper.sweep_once()
        await second.client.aclose()
        assert (await reopened.queue_stats(HUD_QUEUE)).depth == 0
        await reopened.close()

    assert report.handled[HUD_QUEUE] == {"done": 1}
    row = hud.only_row()
    assert (row["status"], row["conclusion"]) == ("completed", "failure")


async def test_a_queued_in_progress_never_overwrites_a_later_completed(relay: Relay) -> None:
    await relay.dispatch("d-1")
    relay.hud.down = True
    queued = await relay.post(callback_body("d-1"))
    relay.hud.down = False
    done = await relay.post(callback_body("d-1", "completed", "success"))

    report = await relay.sweeper.sweep_once()

    assert (queued.status_code, done.status_code) == (202, 200)
    assert report.handled[HUD_QUEUE] == {"done": 1}
    assert relay.hud.writes == 1
    assert relay.hud.only_row()["status"] == "completed"


async def test_an_unexpected_failure_is_a_500_with_a_request_id_and_no_details(
    relay: Relay,
) -> None:
    async def broken_allowlist() -> None:
        raise RuntimeError("db password is hunter2")

    relay.deps.allowlist = broken_allowlist  # type: ignore[assignment]

    response = await relay.post(callback_body("d-1"))

    assert response.status_code == 500
    assert set(response.json()) == {"error", "request_id"}
    assert "hunter2" not in response.text
    assert "Traceback" not in response.text

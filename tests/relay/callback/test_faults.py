"""Callbacks when things break: the state store, the HUD, the relay itself.

The promises: fail closed with nothing half-written when the store is gone; answer
202 and lose nothing when the HUD is gone, even across a relay restart; never show a
stack trace or a secret.
"""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path

from tests.relay import callback_harness as harness
from tests.relay.callback_harness import (
    L2_REPO,
    Clock,
    Relay,
    StandInHud,
    StoreOpener,
    build_relay,
    callback_body,
    outside_world,
)

from crcr.relay.allowlist.model import Allowlist
from crcr.relay.jobs.events import JobTransitioned
from crcr.relay.jobs.lifecycle import COMPLETION_GRACE, JobState, job_store_key
from crcr.relay.results.forwarder import HUD_QUEUE
from crcr.sandbox.oidc_issuer import SandboxIssuer
from crcr.stores.redis.state import RedisStateStore

opener, signing_key, issuer = harness.opener, harness.signing_key, harness.issuer
relay = harness.relay


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"redis://127.0.0.1:{port}/0"


async def test_an_unreachable_store_fails_closed_with_503(
    issuer: SandboxIssuer, tmp_path: Path
) -> None:
    dead = RedisStateStore.from_url(closed_port_url(), timeout=0.2)
    async with StandInHud(tmp_path / "hud.db") as hud, outside_world(issuer, hud) as http:
        built = await build_relay(dead, hud, issuer, Clock(), http)
        async with built.client:
            response = await built.post(callback_body("d-1"))

    assert response.status_code == 503
    assert response.headers["retry-after"]
    assert "unavailable" in response.json()["detail"]
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


async def test_a_hud_4xx_is_passed_to_the_caller_and_the_job_put_back(relay: Relay) -> None:
    await relay.dispatch("d-1")
    await relay.post(callback_body("d-1"))

    relay.hud.refusal = (422, "workflow.conclusion: not one this HUD knows")
    refused = await relay.post(callback_body("d-1", "completed", "neutral"))
    relay.hud.refusal = None

    assert refused.status_code == 422  # the HUD's own answer, passed on
    assert "not one this HUD knows" in refused.json()["detail"]
    assert (await relay.store.queue_stats(HUD_QUEUE)).depth == 0
    assert [event.job.state for event in relay.accepted] == [JobState.IN_PROGRESS]  # no hooks
    job = await relay.store.get_job(job_key("d-1"))
    assert job is not None and job.state == JobState.IN_PROGRESS
    # Not left to the sweeper's lost-completion redo: the zombie deadline is back.
    relay.clock.advance(COMPLETION_GRACE + 1)
    assert await relay.store.overdue(relay.clock()) == []

    corrected = await relay.post(callback_body("d-1", "completed", "failure"))

    assert (corrected.status_code, corrected.json()) == (200, {"status": "accepted"})
    row = relay.hud.only_row()
    assert (row["status"], row["conclusion"]) == ("completed", "failure")


async def test_a_value_our_hud_would_refuse_is_refused_before_the_job_moves(
    relay: Relay,
) -> None:
    await relay.dispatch("d-1")
    await relay.post(callback_body("d-1"))
    writes = relay.hud.writes

    refused = await relay.post(callback_body("d-1", "completed", "Rejected-By-HUD"))

    assert refused.status_code == 400
    assert refused.json()["detail"].startswith("workflow.conclusion: is not a check-run")
    assert relay.hud.writes == writes
    job = await relay.store.get_job(job_key("d-1"))
    assert job is not None and job.state == JobState.IN_PROGRESS


async def test_a_slow_hud_costs_the_caller_no_more_than_the_budget(relay: Relay) -> None:
    await relay.dispatch("d-1")
    relay.deps.forward_budget = 0.3
    relay.hud.delay = 30.0
    started = time.monotonic()

    response = await relay.post(callback_body("d-1"))

    assert response.status_code == 202
    assert time.monotonic() - started < 2.0
    assert (await relay.store.queue_stats(HUD_QUEUE)).depth == 1


async def test_hooks_that_hang_share_one_budget(relay: Relay) -> None:
    await relay.dispatch("d-1")
    never = asyncio.Event()

    async def hanging_hook(event: JobTransitioned) -> None:
        await never.wait()

    relay.deps.on_accepted[:0] = [hanging_hook, hanging_hook, hanging_hook]
    relay.deps.hook_budget = 0.3
    started = time.monotonic()

    response = await relay.post(callback_body("d-1"))

    assert response.json() == {"status": "accepted"}
    assert time.monotonic() - started < 2.0  # not 3 x 0.3 s and then the last hook
    # A hook that needs no waiting (as the check publisher's enqueue) still gets its turn.
    assert len(relay.accepted) == 1


async def test_checks_that_hang_answer_503_and_write_nothing(relay: Relay) -> None:
    await relay.dispatch("d-1")
    never = asyncio.Event()
    allowlist = relay.deps.allowlist

    async def hanging_allowlist() -> Allowlist:
        await never.wait()
        return await allowlist()

    relay.deps.allowlist = hanging_allowlist
    relay.deps.check_budget = 0.2

    response = await relay.post(callback_body("d-1"))

    assert response.status_code == 503
    assert response.headers["retry-after"]
    assert "could not be checked within 0.2 s" in response.json()["detail"]
    assert await relay.store.get_job(job_key("d-1")) is None
    assert relay.hud.writes == 0

    relay.deps.allowlist = allowlist
    assert (await relay.post(callback_body("d-1"))).json() == {"status": "accepted"}


async def test_a_self_report_does_not_wait_long_for_github(relay: Relay) -> None:
    never = asyncio.Event()

    async def hanging_commit_exists(repo: str, sha: str) -> bool:
        await never.wait()
        return True

    relay.deps.commit_exists = hanging_commit_exists
    relay.deps.lookup_budget = 0.2

    response = await relay.post(
        callback_body("abcdef1", "completed", "success", event_type="nightly")
    )

    assert response.json() == {"status": "accepted"}
    assert len(relay.hud.rows) == 1
    assert relay.hud.received[-1]["trusted"]["sha_verified"] is False


def job_key(delivery_id: str) -> str:
    return job_store_key(delivery_id, L2_REPO, "9001", "1", "test")


async def test_hud_down_answers_202_and_the_row_arrives_after_a_restart(
    opener: StoreOpener, issuer: SandboxIssuer, tmp_path: Path
) -> None:
    clock = Clock()
    async with StandInHud(tmp_path / "hud.db") as hud, outside_world(issuer, hud) as http:
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
    assert report.handled[HUD_QUEUE] == {"skipped": 1}
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
    assert set(response.json()) == {"detail", "request_id"}
    assert "hunter2" not in response.text
    assert "Traceback" not in response.text

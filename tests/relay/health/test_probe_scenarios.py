"""The canary over the sandbox (SPEC §13): probes on schedule, Healthy, Degraded when overdue.

The real relay app runs in front of the sandbox GitHub on both state stores; the canary
is the allowlist's L2 backend. Clocks are injected: the probe sender's slots and the
health document's "now"; dispatch times are the audit trail's own.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import StoreOpener
from tests.relay.checks_harness import (
    L2_REPO,
    L3_REPO,
    World,
    installed_sandbox,
    open_world,
    sandbox_app,
)

from crcr.relay.alerts.alert import Alert
from crcr.relay.allowlist.model import Allowlist, parse_allowlist
from crcr.relay.health.probes import ProbeSender
from crcr.sandbox.github_identity import SandboxApp

opener, signing_key, sandbox_app = harness.opener, harness.signing_key, sandbox_app

CANARY = L2_REPO
HOUR = 3600.0
T0 = 1_800_000_000.0  # the start of a slot


@pytest.fixture
async def world(
    opener: StoreOpener, tmp_path: Path, sandbox_app: SandboxApp, signing_key: harness.SigningKey
) -> AsyncIterator[World]:
    sandbox = installed_sandbox(sandbox_app)
    async with open_world(
        opener, tmp_path, sandbox, signing_key, canary_repo=CANARY, canary_interval=HOUR
    ) as opened:
        opened.runtime.sweeper.extra_steps.clear()
        yield opened


def probes_of(world: World) -> ProbeSender:
    assert world.runtime.probes is not None
    return world.runtime.probes


async def send_probe(world: World, at: float) -> str:
    """The leader's probe at clock `at`; its delivery id."""
    sender = replace(probes_of(world), clock=lambda: at)
    outcome = await sender.send()
    assert outcome is not None and outcome.result == "dispatched", outcome
    return str(world.sandbox.dispatches(CANARY)[-1].client_payload["delivery_id"])


async def finish(world: World, delivery: str, job: str, conclusion: str, **extra: Any) -> None:
    """One probe job runs and completes; `extra` goes into `workflow`."""
    for status, concluded in (("in_progress", None), ("completed", conclusion)):
        body = world.callback_body(CANARY, delivery, status, concluded, job=job)
        body["workflow"].update(extra)
        answer = await world.post_callback(CANARY, body)
        assert answer.status_code == 200, answer.text


async def health(world: World, later: float = 0.0) -> dict[str, Any]:
    """`GET /api/crcr/health` with the health clock `later` seconds ahead of now."""
    assert world.runtime.audit is not None and world.runtime.health is not None
    await world.runtime.audit.flush()
    world.runtime.health.clock = lambda: time.time() + later
    answer = await world.client.get("/api/crcr/health")
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


async def test_one_probe_per_interval_across_two_instances(world: World) -> None:
    await send_probe(world, T0 + 10)
    other_instance = replace(probes_of(world), clock=lambda: T0 + 20)
    assert await other_instance.send() is None
    await send_probe(world, T0 + HOUR + 5)

    sent = world.sandbox.dispatches(CANARY)
    assert [d.event_type for d in sent] == ["crcr_probe", "crcr_probe"]
    assert world.sandbox.dispatches(L3_REPO) == []


async def test_no_probe_when_the_interval_is_zero(world: World) -> None:
    off = replace(probes_of(world), interval=0.0, clock=lambda: T0 + 3 * HOUR)
    assert await off.send() is None
    assert world.sandbox.dispatches(CANARY) == []


async def test_healthy_with_an_xfail_job_and_an_expected_conclusion_job_failing(
    world: World,
) -> None:
    delivery = await send_probe(world, T0)
    await finish(world, delivery, "test", "success")
    await finish(world, delivery, "probe-xfail", "failure")
    await finish(world, delivery, "declared", "failure", expected_conclusion="failure")

    report = await health(world)

    assert report["status"] == "healthy"
    assert report["canary"] == CANARY
    assert [(p["delivery_id"], p["event_type"], p["state"]) for p in report["probes"]] == [
        (delivery, "crcr_probe", "passed")
    ]
    assert report["unexpected"] == [] and report["overdue"] == []


async def test_an_explicit_expectation_beats_the_name(world: World) -> None:
    delivery = await send_probe(world, T0)
    await finish(world, delivery, "probe-xfail", "failure", expected_conclusion="success")

    report = await health(world)

    assert report["status"] == "degraded"
    assert report["unexpected"] == [
        {
            "delivery_id": delivery,
            "job_name": "probe-xfail",
            "conclusion": "failure",
            "expected": "success",
        }
    ]


async def test_degraded_when_a_probe_is_overdue_listing_only_it(world: World) -> None:
    answered = await send_probe(world, T0)
    await finish(world, answered, "test", "success")
    silent = await send_probe(world, T0 + HOUR)

    assert (await health(world))["status"] == "healthy"  # the silent one is still running
    report = await health(world, later=1800 + 60)

    assert report["status"] == "degraded"
    assert [o["delivery_id"] for o in report["overdue"]] == [silent]
    assert report["unexpected"] == []
    states = {p["delivery_id"]: p["state"] for p in report["probes"]}
    assert states == {answered: "passed", silent: "overdue"}


async def test_without_a_canary_health_has_no_data(world: World) -> None:
    assert world.runtime.health is not None
    world.runtime.health.settings = world.runtime.settings.model_copy(update={"canary_repo": None})
    report = await health(world)
    assert report["status"] == "no_data" and report["canary"] is None
    assert {b["repo"] for b in report["backends"]} >= {L2_REPO, L3_REPO}


async def test_a_backend_sent_dispatches_but_silent_for_stale_hours_is_stale(
    world: World,
) -> None:
    await world.pull_request()
    report = await health(world)
    states = {b["repo"]: b["state"] for b in report["backends"]}
    assert states[L3_REPO] == "no_data"

    stale = await health(world, later=48 * HOUR)
    states = {b["repo"]: b["state"] for b in stale["backends"]}
    assert states[L3_REPO] == "stale"


async def test_the_health_page_and_every_header_say_degraded(world: World) -> None:
    answered = await send_probe(world, T0)
    await finish(world, answered, "test", "success")
    silent = await send_probe(world, T0 + HOUR)
    await health(world, later=1800 + 60)  # the API's verdict is the chip's too

    page = await world.client.get("/crcr/health")
    assert page.status_code == 200
    assert 'data-health="degraded"' in page.text
    assert f'data-delivery="{silent}"' in page.text
    assert page.text.count(f'data-delivery="{answered}"') == 1  # in the probes, nowhere else
    summary = await world.client.get("/crcr")
    assert "data-health-chip" in summary.text and ">Degraded<" in summary.text


async def test_one_alert_when_the_canary_turns_degraded_and_one_when_it_recovers(
    world: World,
) -> None:
    runtime = world.runtime
    assert runtime.alerts is not None and runtime.health is not None and runtime.audit
    assembler, audit = runtime.health, runtime.audit

    async def check() -> list[Alert]:
        await audit.flush()  # the dispatches' audit entries are written in the background
        assert runtime.alerts is not None
        return await runtime.alerts.check()

    answered = await send_probe(world, T0)
    await finish(world, answered, "test", "success")
    raised = await check()  # Healthy: a first state, no alert
    silent = await send_probe(world, T0 + HOUR)
    assembler.clock = lambda: time.time() + 1860
    raised += await check()
    raised += await check()  # still Degraded: nothing new
    await finish(world, silent, "test", "success")
    raised += await check()

    canary = [(a.before, a.after) for a in raised if a.kind == "canary"]
    assert canary == [("healthy", "degraded"), ("degraded", "healthy")]


async def test_an_l1_backend_is_never_judged(world: World) -> None:
    """L1 results are not recorded: judged, an L1 backend would read as stale forever."""

    async def allowlist() -> Allowlist:
        return parse_allowlist(f"L1:\n  - org/quiet\nL2:\n  - {L2_REPO}\n")

    assert world.runtime.health is not None
    world.runtime.health.allowlist = allowlist
    report = await health(world, later=100 * HOUR)
    assert [b["repo"] for b in report["backends"]] == [L2_REPO]


async def test_the_canarys_own_state_follows_what_its_jobs_should_conclude(world: World) -> None:
    """Its `xfail` jobs fail on every push, as they should: the canary is passing, not
    failing; one that passes where it should fail counts as its failure."""
    for n in range(3):
        delivery = await world.push(f"{n + 1:040x}")
        await finish(world, delivery, "probe-xfail", "failure")
    states = {b["repo"]: b["state"] for b in (await health(world))["backends"]}
    assert states[CANARY] == "passing"

    for n in range(3, 6):
        delivery = await world.push(f"{n + 1:040x}")
        await finish(world, delivery, "probe-xfail", "success")
    states = {b["repo"]: b["state"] for b in (await health(world))["backends"]}
    assert states[CANARY] == "failing"

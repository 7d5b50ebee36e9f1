"""The sandbox's canary (`crcr sandbox --canary`, `crcr demo`) over the real relay (SPEC §13).

It answers the leader's `crcr_probe` and a closed pull request's dispatch alike with
its probe jobs, through the real reporter, and the relay's health turns Healthy: the
`probe-xfail` job fails, as it should.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import StoreOpener
from tests.relay.checks_harness import (
    ISSUER_URL,
    L2_REPO,
    World,
    installed_sandbox,
    open_world,
    sandbox_app,
)
from tests.waiting import eventually

from crcr.reporter.retry import RetryPolicy
from crcr.sandbox.canary import CANARY_WORKFLOW, CanaryCI
from crcr.sandbox.github_identity import SandboxApp

opener, signing_key, sandbox_app = harness.opener, harness.signing_key, sandbox_app

CANARY = L2_REPO


@pytest.fixture
async def world(
    opener: StoreOpener, tmp_path: Path, sandbox_app: SandboxApp, signing_key: harness.SigningKey
) -> AsyncIterator[World]:
    sandbox = installed_sandbox(sandbox_app)
    async with open_world(
        opener, tmp_path, sandbox, signing_key, canary_repo=CANARY, canary_interval=3600
    ) as opened:
        opened.runtime.sweeper.extra_steps.clear()
        yield opened


@pytest.fixture
async def canary(world: World, tmp_path: Path) -> AsyncIterator[CanaryCI]:
    """The canary's CI: tokens from the sandbox's issuer, reports to the relay app."""
    issuer_app = Starlette(routes=[Mount("/oidc", routes=world.issuer.routes())])
    http = httpx.AsyncClient(
        mounts={
            ISSUER_URL.rsplit("/oidc", 1)[0]: httpx.ASGITransport(app=issuer_app),
            "http://relay": world.client._transport,  # the relay app, in process
        }
    )
    ci = CanaryCI(
        world.sandbox,
        world.issuer,
        callback_url="http://relay/github/callback",
        workflows={CANARY: CANARY_WORKFLOW},
        client=http,
        speed=1000.0,
        seed=1,
        work_dir=tmp_path / "canary",
        poll_interval=0.005,
        retry_policy=RetryPolicy(attempts=1),
    )
    await ci.start()
    yield ci
    await ci.stop()
    await http.aclose()


async def health(world: World) -> dict[str, object]:
    assert world.runtime.audit is not None
    await world.runtime.audit.flush()
    document: dict[str, object] = (await world.client.get("/api/crcr/health")).json()
    return document


async def test_the_canary_answers_probes_and_a_closed_prs_dispatch_and_health_is_healthy(
    world: World, canary: CanaryCI
) -> None:
    assert world.runtime.probes is not None
    probe = await replace(world.runtime.probes, clock=lambda: 1_800_000_000.0).send()
    assert probe is not None and probe.result == "dispatched"
    await world.pull_request(action="closed")

    async def every_probe_passed() -> bool:
        probes = (await health(world))["probes"]
        assert isinstance(probes, list)
        return len(probes) == 2 and all(p["state"] == "passed" for p in probes)

    await eventually(every_probe_passed, what="both probes answered and passed")
    report = await health(world)
    assert report["status"] == "healthy" and report["unexpected"] == []
    assert {p["event_type"] for p in report["probes"]} == {"crcr_probe", "pull_request"}  # type: ignore[index, union-attr]
    assert canary.snapshot().report_errors == 0

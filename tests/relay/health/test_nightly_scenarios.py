"""The canary's nightly probe runs on the health API and page (SPEC §13), both stores.

The canary's nightly workflow reports itself (`crcr report --event-type nightly`): the
health document shows the newest runs, each passed or failed by the probe rules
(`xfail`, `expected_conclusion`), as the reference's nightly card does, with only the
unexpected jobs listed; the probes' own verdict is left as it is.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import StoreOpener
from tests.relay.checks_harness import (
    L2_REPO,
    UPSTREAM,
    World,
    installed_sandbox,
    open_world,
    run_url,
    sandbox_app,
)

from crcr.reporter.body import ReportOptions, self_report_dispatch
from crcr.sandbox.github_identity import SandboxApp

opener, signing_key, sandbox_app = harness.opener, harness.signing_key, sandbox_app

CANARY = L2_REPO


@pytest.fixture
async def world(
    opener: StoreOpener, tmp_path: Path, sandbox_app: SandboxApp, signing_key: harness.SigningKey
) -> AsyncIterator[World]:
    sandbox = installed_sandbox(sandbox_app)
    async with open_world(
        opener, tmp_path, sandbox, signing_key, canary_repo=CANARY, canary_interval=0
    ) as opened:
        opened.runtime.sweeper.extra_steps.clear()
        yield opened


async def nightly(world: World, sha: str, run_id: int, job: str, conclusion: str) -> None:
    """One job of the canary's nightly run on `sha`, self-reported as the reporter does."""
    world.sandbox.add_commit(UPSTREAM, sha)  # the relay checks the tested commit exists
    options = ReportOptions(
        status="completed",
        conclusion=conclusion,
        event_type="nightly",
        delivery_id=sha,
        upstream_repo=UPSTREAM,
    )
    body: dict[str, Any] = self_report_dispatch(options)
    body["workflow"] = {
        "schema_version": "1",
        "status": "completed",
        "conclusion": conclusion,
        "name": "nightly-probes",
        "url": run_url(CANARY, run_id),
        "run_id": str(run_id),
        "run_attempt": "1",
        "job_name": job,
        "check_run_id": str(run_id * 10 + len(job)),
        "completed_at": "2026-11-27T03:00:00Z",
    }
    answer = await world.post_callback(CANARY, body)
    assert answer.status_code == 200, answer.text


async def health(world: World) -> dict[str, Any]:
    answer = await world.client.get("/api/crcr/health")
    assert answer.status_code == 200, answer.text
    document: dict[str, Any] = answer.json()
    return document


async def test_nightly_runs_are_judged_by_the_probe_rules_listing_only_the_unexpected(
    world: World,
) -> None:
    good, bad = "a" * 40, "b" * 40
    await nightly(world, good, 1, "probe", "success")
    await nightly(world, good, 1, "probe-xfail", "failure")
    first = (await health(world))["nightly"]
    assert first["status"] == "healthy" and first["unexpected"] == []
    assert [(run["delivery_id"], run["state"]) for run in first["runs"]] == [(good, "passed")]

    await nightly(world, bad, 2, "probe", "success")
    await nightly(world, bad, 2, "probe-xfail", "success")
    document = await health(world)

    card = document["nightly"]
    assert card["status"] == "degraded"
    assert [(run["delivery_id"], run["state"]) for run in card["runs"]] == [
        (bad, "failed"),
        (good, "passed"),
    ]
    assert card["unexpected"] == [
        {
            "delivery_id": bad,
            "job_name": "probe-xfail",
            "conclusion": "success",
            "expected": "failure",
        }
    ]
    assert document["status"] == "no_data"  # no probe was dispatched: nightly is apart
    assert document["probes"] == []

    page = await world.client.get("/crcr/health")
    assert 'data-nightly="degraded"' in page.text
    assert f'data-nightly-run="{bad}"' in page.text and f'data-nightly-run="{good}"' in page.text


async def test_without_nightly_reports_the_card_has_no_data(world: World) -> None:
    card = (await health(world))["nightly"]
    assert card == {"status": "no_data", "runs": [], "unexpected": []}

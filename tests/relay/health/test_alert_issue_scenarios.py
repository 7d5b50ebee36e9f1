"""The upstream-issue alert sink over the sandbox (SPEC §13), two instances, both stores.

With `CRCR_ALERT_ISSUES=true` a backend that turns `failing` gets one issue on the
upstream repository naming its oncalls, however many failures follow and however many
instances raise and deliver; it is closed with a comment when the backend recovers.
Every call the sink makes, and every answer the sandbox gives, is as GitHub documents.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.github_description import mismatches
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import StoreOpener
from tests.relay.checks_harness import (
    L3_REPO,
    UPSTREAM,
    World,
    installed_sandbox,
    open_world,
    sandbox_app,
)
from tests.relay.health.test_alert_scenarios import push_result, second_instance

from crcr.relay.alerts.issues import ISSUE_QUEUE, IssueSink, issue_marker
from crcr.sandbox.github_identity import SandboxApp
from crcr.sandbox.github_routes_issues import issues_of

opener, signing_key, sandbox_app = harness.opener, harness.signing_key, sandbox_app


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
        alert_issues=True,
        hud_public_url="https://hud.example.org",
    ) as opened:
        opened.runtime.sweeper.extra_steps.clear()
        yield opened


def issues(world: World) -> list[dict[str, object]]:
    return [
        i for i in issues_of(world.sandbox, UPSTREAM) if issue_marker(L3_REPO) in str(i["body"])
    ]


async def test_one_issue_naming_the_oncalls_while_failing_closed_on_recovery(
    world: World, opener: StoreOpener
) -> None:
    assert world.runtime.alerts is not None
    first = world.runtime.alerts
    async for other in second_instance(world, opener):
        for n in range(3):
            await push_result(world, n, "success")
        await first.check()
        for n in range(3, 13):
            await push_result(world, n, "failure")
            await asyncio.gather(first.check(), other.check())  # two instances race
            await world.settle()

        (opened,) = issues(world)
        assert opened["state"] == "open" and opened["labels"] == ["crcr-alert"]
        assert opened["title"] == f"[CRCR] {L3_REPO} is failing"
        assert "@xpu-oncall" in str(opened["body"])
        assert f"(https://hud.example.org/crcr/{L3_REPO})" in str(opened["body"])

        # The same alert delivered again (a worker that died before acknowledging it).
        sink = IssueSink(
            world.runtime.github, UPSTREAM, world.runtime.allowlist, world.runtime.store
        )
        listed = (await world.client.get("/api/crcr/alerts")).json()["alerts"]
        assert [(a["from"], a["to"]) for a in listed] == [("passing", "failing")]
        await sink.reconcile(listed[0])
        assert len(issues(world)) == 1

        await push_result(world, 13, "success")
        await asyncio.gather(other.check(), first.check())
        await world.settle()

    (closed,) = issues(world)
    assert closed["state"] == "closed" and closed["state_reason"] == "completed"
    (comment,) = world.sandbox.comments(UPSTREAM, int(str(closed["number"])))
    assert "recovered" in comment["body"] and "`passing`" in comment["body"]
    assert (await world.runtime.store.queue_stats(ISSUE_QUEUE)).depth == 0
    assert mismatches(world.sandbox.calls()) == []


async def test_an_alert_handled_before_its_state_is_recorded_is_retried(world: World) -> None:
    sink = IssueSink(world.runtime.github, UPSTREAM, world.runtime.allowlist, world.runtime.store)
    alert = {
        "kind": "backend_state",
        "repo": L3_REPO,
        "from": "passing",
        "to": "failing",
        "at": "2026-11-28T00:00:00Z",
        "url": None,
    }
    await world.runtime.store.cache_set("alert-state", f"backend_state:{L3_REPO}", "passing", 60)
    assert str(await sink.reconcile(alert)) == "retry"
    assert issues(world) == []

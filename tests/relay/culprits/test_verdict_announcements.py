"""A verdict reaches people (SPEC §14): the alert sinks, the alert log, the culprit's PR.

Also the manual start (`crcr bisect`'s path): a backend owner names the range, and the
leader drives the bisection to its verdict like one it started itself.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import StoreOpener
from tests.relay.checks_harness import (
    UPSTREAM,
    World,
    installed_sandbox,
    open_world,
    sandbox_app,
)
from tests.relay.culprits.bisect_harness import (
    BROKEN,
    HEALTHY,
    BackendCI,
    bisect_to_the_end,
    broken_between,
    land_history,
    push_and_report,
    the_finder,
)

from crcr.relay.alerts.sinks import ALERT_QUEUE
from crcr.relay.culprits.finder import BisectRefused
from crcr.sandbox.github_identity import SandboxApp

signing_key, sandbox_app = harness.signing_key, sandbox_app


@pytest.fixture
def opener(tmp_path: Path) -> StoreOpener:
    """SQLite alone: what is under test here keeps nothing the two stores do differently
    (the bisection scenarios and the store contract cover both)."""
    return StoreOpener("sqlite", tmp_path / "state.db")


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
        alert_after=1,
        culprit_comment=True,
        alert_webhook="https://alerts.example.org/hook",
        hud_public_url="https://hud.example.org",
    ) as opened:
        opened.runtime.sweeper.extra_steps.clear()
        yield opened


async def test_a_confirmed_culprit_is_alerted_once_and_commented_on_its_pr_with_the_oncalls(
    world: World,
) -> None:
    history = land_history(world, 5)
    await broken_between(world, history)
    ci = BackendCI(world, history, culprit=history.commits[1])  # "Change 2 (#502)"

    await bisect_to_the_end(the_finder(world), ci)
    for _ in range(2):  # later passes announce nothing again
        await the_finder(world).run_pass()

    [comment] = world.sandbox.comments(UPSTREAM, 502)
    assert f"`{BROKEN}`" in comment["body"] and "@xpu-oncall" in comment["body"]
    assert history.commits[1][:12] in comment["body"]
    assert f"https://hud.example.org/crcr/{BROKEN}" in comment["body"]
    assert all(world.sandbox.comments(UPSTREAM, n) == [] for n in (501, 503, 504, 505))
    alerts = (await world.client.get("/api/crcr/alerts")).json()["alerts"]
    [alert] = [a for a in alerts if a["kind"] == "culprit"]
    assert alert["repo"] == BROKEN and (alert["from"], alert["to"]) == ("running", "confirmed")
    assert alert["culprit"] == history.commits[1]
    leased = await world.runtime.store.lease(ALERT_QUEUE, lease_seconds=5, limit=10)
    assert [item.payload["alert"]["kind"] for item in leased] == ["culprit"]


async def test_an_inconclusive_search_alerts_but_comments_on_no_pr(world: World) -> None:
    history = land_history(world, 3)
    await broken_between(world, history)

    def always_passes(payload: dict[str, object]) -> str:
        return "success"  # the break does not reproduce: the re-test of `bad` passes

    await bisect_to_the_end(
        the_finder(world), BackendCI(world, history, history.bad, override=always_passes)
    )

    alerts = (await world.client.get("/api/crcr/alerts")).json()["alerts"]
    assert [a["to"] for a in alerts if a["kind"] == "culprit"] == ["inconclusive"]
    assert all(world.sandbox.comments(UPSTREAM, 500 + n) == [] for n in range(4))


async def test_a_range_named_by_hand_is_bisected_on_a_backend_that_is_not_failing(
    world: World,
) -> None:
    history = land_history(world, 6)
    await push_and_report(world, history.good, {BROKEN: "success", HEALTHY: "success"})
    ci = BackendCI(world, history, culprit=history.commits[4])

    started = await the_finder(world).start(BROKEN, history.good, history.bad, origin="manual")
    with pytest.raises(BisectRefused, match="already bisecting"):
        await the_finder(world).start(BROKEN, history.good, history.bad, origin="manual")
    await ci.answer()
    await bisect_to_the_end(the_finder(world), ci)

    assert started.origin == "manual" and len(started.steps) == 1
    [verdict] = (await world.client.get("/api/crcr/culprits?repo=" + BROKEN)).json()["culprits"]
    assert verdict["verdict"] == "confirmed" and verdict["culprit"] == history.commits[4]

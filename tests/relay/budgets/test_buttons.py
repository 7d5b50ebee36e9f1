"""The buttons on L3/L4 check runs (SPEC §15 "Buttons"): each does what it says.

`Re-run failed` re-runs the failed jobs of the downstream run behind the check, through
the path a "Re-run" click takes; `Snooze 24 h` keeps that backend's oncall comment off
that PR for 24 hours and no longer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from tests.github_description import mismatches
from tests.relay import callback_harness
from tests.relay.callback_harness import Clock, StoreOpener
from tests.relay.checks_harness import (
    HEAD_SHA,
    L4_REPO,
    PR_NUMBER,
    UPSTREAM,
    World,
    installed_sandbox,
    open_world,
    run_url,
    sandbox_app,
)

from crcr.sandbox.github_identity import SandboxApp
from crcr.sandbox.oidc_issuer import SigningKey
from crcr.sandbox.webhooks import check_run_event

opener, signing_key = callback_harness.opener, callback_harness.signing_key
__all__ = ["sandbox_app"]

RUN_ID = 4242
CHECK = f"crcr/{L4_REPO}/ci/test"


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def instance(
    opener: StoreOpener,
    tmp_path: Path,
    sandbox_app: SandboxApp,
    signing_key: SigningKey,
    clock: Clock,
) -> Callable[[], AbstractAsyncContextManager[World]]:
    """Relay instances sharing one store and sandbox: the check-run world, without the
    L4 confirmation re-run (its own re-run would mix with the button's) and with a clock
    the test moves."""
    sandbox = installed_sandbox(sandbox_app)

    @asynccontextmanager
    async def opened() -> AsyncIterator[World]:
        async with open_world(
            opener, tmp_path, sandbox, signing_key, clock=clock, l4_confirm_rerun=0
        ) as world:
            world.runtime.sweeper.extra_steps.clear()
            world.checks.inline_budget = world.checks.backfill_budget = 30.0
            yield world

    return opened


@pytest.fixture
async def world(instance: Callable[[], AbstractAsyncContextManager[World]]) -> AsyncIterator[World]:
    async with instance() as opened:
        yield opened


async def _fail(world: World, delivery: str, job: str = "test", run_id: int = RUN_ID) -> None:
    for status, conclusion in (("in_progress", None), ("completed", "failure")):
        answer = await world.report(L4_REPO, delivery, status, conclusion, job=job, run_id=run_id)
        assert answer.is_success, answer.text
    await world.settle()


async def _press(world: World, check_run: dict[str, Any], identifier: str) -> dict[str, Any]:
    payload = check_run_event(
        "requested_action",
        repo=UPSTREAM,
        head_sha=check_run["head_sha"],
        name=check_run["name"],
        check_run_id=int(check_run["id"]),
        external_id=check_run["external_id"],
        details_url=check_run["details_url"],
        pull_number=PR_NUMBER,
        identifier=identifier,
    )
    response = await world.webhook("check_run", payload)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


async def test_l4_check_runs_carry_both_buttons_within_githubs_limits(world: World) -> None:
    delivery = await world.pull_request()
    await _fail(world, delivery)

    created = [c for c in world.sandbox.calls() if c.path.endswith("/check-runs")]
    assert created
    assert mismatches(created) == []  # labels ≤ 20, identifiers ≤ 20, descriptions ≤ 40
    for call in created:
        assert [a["identifier"] for a in call.json["actions"]] == ["rerun-failed", "snooze-24h"]


async def test_re_run_failed_re_runs_the_failed_jobs_of_the_downstream_run(world: World) -> None:
    world.sandbox.add_workflow_run(L4_REPO, RUN_ID, status="completed", conclusion="failure")
    delivery = await world.pull_request()
    await _fail(world, delivery)

    answer = await _press(world, world.latest(CHECK), "rerun-failed")

    assert answer["rerun"] == [{"repo": L4_REPO, "run_id": RUN_ID, "outcome": "started"}]
    (rerun,) = world.sandbox.reruns(L4_REPO)
    assert (rerun.run_id, rerun.kind) == (RUN_ID, "rerun-failed-jobs")


BUILD = {  # the check run GitHub shows for a job of this PR, as crcr names it
    "id": 1,
    "name": f"crcr/{L4_REPO}/ci/build",
    "head_sha": HEAD_SHA,
    "external_id": f"{RUN_ID}:{PR_NUMBER}",
    "details_url": run_url(L4_REPO, RUN_ID),
}


async def test_snooze_keeps_the_oncall_comment_off_the_pr_for_24_hours(
    world: World, clock: Clock
) -> None:
    delivery = await world.pull_request()
    answer = await _press(world, BUILD, "snooze-24h")
    assert answer["snoozed"]["repo"] == L4_REPO
    assert answer["snoozed"]["pr_number"] == PR_NUMBER

    await _fail(world, delivery)
    assert world.comments() == []

    clock.advance(24 * 3600 + 1)
    await _fail(world, delivery, job="lint", run_id=RUN_ID + 1)
    (comment,) = world.comments()
    assert "oncall1" in comment["body"]


async def test_a_snooze_pressed_on_one_instance_holds_on_another(
    instance: Callable[[], AbstractAsyncContextManager[World]],
) -> None:
    async with instance() as pressed_on, instance() as reported_to:
        delivery = await pressed_on.pull_request()
        await _press(pressed_on, BUILD, "snooze-24h")

        await _fail(reported_to, delivery)
        await pressed_on.settle()

        assert reported_to.latest(CHECK)["conclusion"] == "failure"
        assert reported_to.comments() == []

"""Every check run crcr creates reaches a conclusion, whatever level changes meanwhile
(SPEC §10.2 invariant 1; issue 29 item 1).

The scenarios run the real relay over the sandbox GitHub on Redis and on SQLite state:
an L4 job fails, its check run shows "Re-running to confirm", and the backend is
demoted before the confirming re-run reports.
"""

from __future__ import annotations

from tests.relay import callback_harness, checks_harness
from tests.relay.checks_harness import L4_REPO, RUN_ID, World

opener, signing_key = callback_harness.opener, callback_harness.signing_key
sandbox_app, world = checks_harness.sandbox_app, checks_harness.world

CHECK = f"crcr/{L4_REPO}/ci/test"


async def first_attempt_fails(world: World) -> str:
    """An L4 job fails on its first attempt; GitHub takes the confirming re-run."""
    world.sandbox.add_workflow_run(L4_REPO, RUN_ID, status="completed", conclusion="failure")
    delivery = await world.pull_request()
    for status, conclusion in (("in_progress", None), ("completed", "failure")):
        answer = await world.report(L4_REPO, delivery, status, conclusion)
        assert answer.status_code == 200, answer.text
    assert world.latest(CHECK)["output"]["title"] == "Re-running to confirm"
    return delivery


async def demote(world: World) -> None:
    """One level refresh: the failure puts the L4 backend below its criteria."""
    levels = world.runtime.levels
    assert levels is not None
    await levels()
    assert L4_REPO in {d.repo for d in (await world.runtime.demotions.demotions()).values()}


async def rerun_reports(world: World, delivery: str, conclusion: str) -> None:
    for status, reported in (("in_progress", None), ("completed", conclusion)):
        answer = await world.report(L4_REPO, delivery, status, reported, run_attempt=2)
        assert answer.status_code == 200, answer.text


async def test_a_re_run_reporting_after_the_demotion_concludes_the_blocking_check(
    world: World,
) -> None:
    """Issue 29 item 1: before the fix the check stayed "Re-running to confirm" for good."""
    delivery = await first_attempt_fails(world)
    await demote(world)

    await rerun_reports(world, delivery, "failure")
    await world.settle()

    check = world.latest(CHECK)
    assert (check["status"], check["conclusion"]) == ("completed", "failure")
    assert "failed twice" in check["output"]["summary"]


async def test_a_re_run_passing_after_the_demotion_turns_the_check_green_as_flaky(
    world: World,
) -> None:
    delivery = await first_attempt_fails(world)
    await demote(world)

    await rerun_reports(world, delivery, "success")

    check = world.latest(CHECK)
    assert (check["status"], check["conclusion"]) == ("completed", "success")
    assert check["output"]["title"] == "Success (flaky)"


async def test_a_new_job_after_the_demotion_still_gets_no_unlabelled_check_run(
    world: World,
) -> None:
    """The demotion itself keeps working: only check runs already open are concluded."""
    await first_attempt_fails(world)
    await demote(world)
    delivery = await world.pull_request("synchronize")

    for status, conclusion in (("in_progress", None), ("completed", "failure")):
        answer = await world.report(L4_REPO, delivery, status, conclusion, run_id=RUN_ID + 1)
        assert answer.status_code == 200, answer.text

    assert [
        run for run in world.check_runs(CHECK) if run["external_id"].startswith(f"{RUN_ID + 1}:")
    ] == []

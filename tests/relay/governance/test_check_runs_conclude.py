"""Every check run crcr creates reaches a conclusion, whatever level changes meanwhile
(SPEC §10.2 invariant 1; issue 29 item 1).

The scenarios run the real relay over the sandbox GitHub on Redis and on SQLite state:
an L4 job fails, its check run shows "Re-running to confirm", and the backend is
demoted before the confirming re-run reports — or it never reports; or the backend is
removed from the allowlist while its job runs.
"""

from __future__ import annotations

import time
from dataclasses import replace

from tests.relay import callback_harness, checks_harness
from tests.relay.checks_harness import (
    ALLOWLIST,
    L4_REPO,
    RUN_ID,
    World,
)
from tests.relay.governance.steps import blob_world, demote, merge_allowlist, run_job
from tests.waiting import eventually

from crcr.relay.allowlist.model import Level
from crcr.relay.checks.check_runs import check_run_fields, report_from_job
from crcr.relay.checks.open_checks import RECHECK, watch_key
from crcr.relay.jobs.job import Job
from crcr.relay.jobs.lifecycle import job_store_key

opener, signing_key = callback_harness.opener, callback_harness.signing_key
sandbox_app, world = checks_harness.sandbox_app, checks_harness.world
__all__ = ["blob_world", "sandbox_app", "world"]

CHECK = f"crcr/{L4_REPO}/ci/test"


async def first_attempt_fails(world: World) -> str:
    """An L4 job fails on its first attempt; GitHub takes the confirming re-run."""
    world.sandbox.add_workflow_run(L4_REPO, RUN_ID, status="completed", conclusion="failure")
    delivery = await world.pull_request()
    await run_job(world, L4_REPO, delivery, "failure")
    assert world.latest(CHECK)["output"]["title"] == "Re-running to confirm"
    return delivery


def concluded(world: World) -> bool:
    return world.latest(CHECK)["status"] == "completed"


async def test_a_re_run_reporting_after_the_demotion_concludes_the_blocking_check(
    world: World,
) -> None:
    """Issue 29 item 1: before the fix the check stayed "Re-running to confirm" for good."""
    delivery = await first_attempt_fails(world)
    await demote(world, L4_REPO)

    await run_job(world, L4_REPO, delivery, "failure", run_attempt=2)
    await world.settle()

    check = world.latest(CHECK)
    assert (check["status"], check["conclusion"]) == ("completed", "failure")
    assert "failed twice" in check["output"]["summary"]


async def test_a_re_run_passing_after_the_demotion_turns_the_check_green_as_flaky(
    world: World,
) -> None:
    delivery = await first_attempt_fails(world)
    await demote(world, L4_REPO)

    await run_job(world, L4_REPO, delivery, "success", run_attempt=2)

    check = world.latest(CHECK)
    assert (check["status"], check["conclusion"]) == ("completed", "success")
    assert check["output"]["title"] == "Success (flaky)"


async def test_a_new_job_after_the_demotion_still_gets_no_unlabelled_check_run(
    world: World,
) -> None:
    """The demotion itself keeps working: only check runs already open are concluded."""
    await first_attempt_fails(world)
    await demote(world, L4_REPO)
    delivery = await world.pull_request("synchronize")

    await run_job(world, L4_REPO, delivery, "failure", run_id=RUN_ID + 1)

    external_ids = [run["external_id"] for run in world.check_runs(CHECK)]
    assert not any(ext.startswith(f"{RUN_ID + 1}:") for ext in external_ids)


async def test_a_confirming_re_run_that_never_reports_lets_the_failure_stand(
    world: World,
) -> None:
    """A sweeper pass concludes the check once the re-run is `CRCR_ZOMBIE_TIMEOUT` late."""
    world.checks.open_checks.zombie_timeout = 1  # as CRCR_ZOMBIE_TIMEOUT=1 builds it
    world.checks.open_checks.watch_slack = 0
    await first_attempt_fails(world)
    await demote(world, L4_REPO)

    async def swept_until_concluded() -> bool:
        await world.settle()
        return concluded(world)

    await eventually(swept_until_concluded, within=30, what="the check run's conclusion")

    check = world.latest(CHECK)
    assert (check["conclusion"], check["output"]["title"]) == ("failure", "Failure")
    assert "never reported" in check["output"]["summary"]
    assert [run["status"] for run in world.check_runs(CHECK)].count("completed") == 1


async def test_a_watch_leaves_a_check_run_alone_while_its_job_may_still_end(
    world: World,
) -> None:
    """The job runs on past the watch's look: the zombie pass, not the watch, ends it."""
    world.checks.open_checks.zombie_timeout = 1
    world.checks.open_checks.watch_slack = 0
    delivery = await world.pull_request()
    answer = await world.report(L4_REPO, delivery, "in_progress")
    assert answer.status_code == 200, answer.text
    store, watch = world.runtime.store, watch_key(world.latest(CHECK)["head_sha"], CHECK)

    async def looked_and_set_again() -> bool:
        await world.settle()
        due_soon = await store.overdue(time.time() + RECHECK / 2)
        due_later = await store.overdue(time.time() + RECHECK * 2)
        return watch not in due_soon and watch in due_later

    await eventually(looked_and_set_again, within=30, what="the watch's look")

    assert [run["status"] for run in world.check_runs(CHECK)] == ["in_progress"]


async def test_a_removed_backends_open_check_run_times_out_with_its_job(
    blob_world: World,
) -> None:
    """Revocation: no new check runs, but the one in progress still reaches a conclusion."""
    world = blob_world
    delivery = await world.pull_request()
    zombie_timeout = world.runtime.settings.zombie_timeout
    # The job started longer ago than `CRCR_ZOMBIE_TIMEOUT`: the next pass times it out.
    world.runtime.callback.clock = lambda: time.time() - zombie_timeout - 60
    started = await world.report(L4_REPO, delivery, "in_progress")
    assert started.status_code == 200, started.text
    assert world.latest(CHECK)["status"] == "in_progress"

    await merge_allowlist(world, ALLOWLIST.split("L4:")[0])
    finished = await world.report(L4_REPO, delivery, "completed", "success")
    assert finished.json() == {"status": "ignored"}
    await world.settle()

    check = world.latest(CHECK)
    assert (check["status"], check["conclusion"]) == ("completed", "timed_out")
    assert len(world.check_runs(CHECK)) == 2


async def test_a_check_run_whose_job_record_expired_is_timed_out_by_the_sweeper(
    world: World,
) -> None:
    """The job's record outlived `CRCR_STATUS_TTL`: the open check run still concludes."""
    delivery = await world.pull_request()
    await world.report(L4_REPO, delivery, "in_progress")
    opened = world.latest(CHECK)
    # What the record here keeps of a check run whose job the store no longer holds.
    report = replace(
        report_from_job(await job_of(world, delivery)), job_key="expired", run_id="404"
    )
    world.checks.open_checks.zombie_timeout = world.checks.open_checks.watch_slack = 0
    await world.checks.open_checks.opening(report, Level.L4, check_run_fields(report), now=0.0)

    await world.settle()

    check = world.latest(CHECK)
    assert (check["status"], check["conclusion"]) == ("completed", "timed_out")
    assert check["head_sha"] == opened["head_sha"] and check["external_id"].startswith("404:")
    assert "no longer holds this job's record" in check["output"]["summary"]


async def job_of(world: World, delivery: str) -> Job:
    key = job_store_key(delivery, L4_REPO, str(RUN_ID), "1", "test")
    job = Job.readable(key, await world.runtime.store.get_job(key))
    assert job is not None
    return job

"""L4 flake confirmation over the sandbox (SPEC §11): a failed L4 job is re-run once
before its check run fails; the re-run decides between "failed twice" and "flaky".
"""

from __future__ import annotations

import pytest
from tests.relay import callback_harness
from tests.relay.checks_harness import L3_REPO, L4_REPO, RUN_ID, World, sandbox_app, world

from crcr.relay.checks.flake_rerun import RERUN_QUEUE

opener, signing_key = callback_harness.opener, callback_harness.signing_key
__all__ = ["sandbox_app", "world"]

CHECK = f"crcr/{L4_REPO}/ci/test"


async def first_attempt_fails(world: World) -> str:
    world.sandbox.add_workflow_run(L4_REPO, RUN_ID, status="completed", conclusion="failure")
    delivery = await world.pull_request()
    assert (await world.report(L4_REPO, delivery, "in_progress")).status_code == 200
    assert (await world.report(L4_REPO, delivery, "completed", "failure")).status_code == 200
    return delivery


async def second_attempt(world: World, delivery: str, conclusion: str) -> None:
    for status, reported in (("in_progress", None), ("completed", conclusion)):
        response = await world.report(L4_REPO, delivery, status, reported, run_attempt=2)
        assert response.status_code == 200, response.text


async def test_a_failed_l4_job_is_re_run_and_its_check_stays_in_progress(world: World) -> None:
    await first_attempt_fails(world)

    (rerun,) = world.sandbox.reruns(L4_REPO)
    assert (rerun.run_id, rerun.kind) == (RUN_ID, "rerun-failed-jobs")
    check = world.latest(CHECK)
    assert check["status"] == "in_progress" and check["conclusion"] is None
    assert check["output"]["title"] == "Re-running to confirm"
    assert "re-running it once to confirm" in check["output"]["summary"]
    await world.settle()
    assert world.comments() == []  # the oncalls hear of it only if it fails again


async def test_passing_on_the_re_run_turns_the_check_green_marked_flaky(world: World) -> None:
    delivery = await first_attempt_fails(world)

    await second_attempt(world, delivery, "success")

    check = world.latest(CHECK)
    assert (check["status"], check["conclusion"]) == ("completed", "success")
    assert check["output"]["title"] == "Success (flaky)"
    assert "passed on re-run (flaky)" in check["output"]["summary"]
    assert len(world.sandbox.reruns(L4_REPO)) == 1
    await world.settle()
    assert world.comments() == []


async def test_failing_twice_fails_the_check_and_tells_the_oncalls(world: World) -> None:
    delivery = await first_attempt_fails(world)

    await second_attempt(world, delivery, "failure")

    check = world.latest(CHECK)
    assert (check["status"], check["conclusion"]) == ("completed", "failure")
    assert "failed twice" in check["output"]["summary"]
    assert len(world.sandbox.reruns(L4_REPO)) == 1, "never re-run automatically twice"
    await world.settle()
    (comment,) = world.comments()
    assert "@oncall1" in comment["body"]


async def test_a_sweep_after_the_failure_does_not_re_run_again(world: World) -> None:
    await first_attempt_fails(world)

    await world.settle()

    assert len(world.sandbox.reruns(L4_REPO)) == 1


async def test_when_github_refuses_the_re_run_the_check_fails_at_once(world: World) -> None:
    delivery = await world.pull_request()  # no workflow run known: GitHub answers 404
    await world.report(L4_REPO, delivery, "in_progress")
    await world.report(L4_REPO, delivery, "completed", "failure")

    check = world.latest(CHECK)
    assert (check["status"], check["conclusion"]) == ("completed", "failure")
    assert world.sandbox.reruns(L4_REPO) == []


@pytest.mark.parametrize("conclusion", ["success", "timed_out", "cancelled"])
async def test_only_a_failure_is_re_run(world: World, conclusion: str) -> None:
    world.sandbox.add_workflow_run(L4_REPO, RUN_ID, status="completed", conclusion=conclusion)
    delivery = await world.pull_request()
    await world.report(L4_REPO, delivery, "in_progress")
    await world.report(L4_REPO, delivery, "completed", conclusion)

    assert world.sandbox.reruns(L4_REPO) == []
    assert world.latest(CHECK)["conclusion"] == conclusion


async def test_an_l3_failure_is_not_re_run(world: World) -> None:
    world.sandbox.add_workflow_run(L3_REPO, RUN_ID, status="completed", conclusion="failure")
    delivery = await world.pull_request(labels=("ciflow/crcr/xpu",))
    await world.report(L3_REPO, delivery, "in_progress")
    await world.report(L3_REPO, delivery, "completed", "failure")

    assert world.sandbox.reruns(L3_REPO) == []
    assert world.latest(f"crcr/{L3_REPO}/ci/test")["conclusion"] == "failure"


async def test_the_setting_turns_it_off(world: World) -> None:
    world.checks.notes.flake.enabled = False  # as CRCR_L4_CONFIRM_RERUN=0 builds it
    await first_attempt_fails(world)

    assert world.sandbox.reruns(L4_REPO) == []
    assert world.latest(CHECK)["conclusion"] == "failure"


async def test_the_failed_check_names_the_tests_the_baseline_and_links_the_hud(
    world: World,
) -> None:
    world.checks.notes.hud_public_url = "https://hud.example.org"
    delivery = await world.pull_request()  # GitHub refuses the re-run: it fails at once
    await world.report(L4_REPO, delivery, "in_progress")
    body = world.callback_body(L4_REPO, delivery, "completed", "failure")
    body["workflow"]["test_results"] = {
        "passed": 10,
        "failed": 2,
        "skipped": 0,
        "failed_tests": [{"name": "test_conv2d"}, {"name": "test_matmul"}],
    }
    assert (await world.post_callback(L4_REPO, body)).status_code == 200

    summary = world.latest(CHECK)["output"]["summary"]
    assert "Failed tests: `test_conv2d`, `test_matmul`." in summary
    # The in-process HUD has no push result of the default branch to compare with.
    assert "Baseline: no baseline result to compare with." in summary
    assert "(https://hud.example.org/crcr/pr/77)" in summary


async def test_a_run_still_going_gets_its_re_run_from_the_queue(world: World) -> None:
    """The job reports from inside itself: GitHub says "already running" at first."""
    world.sandbox.add_workflow_run(L4_REPO, RUN_ID, status="in_progress", conclusion=None)
    delivery = await world.pull_request()
    await world.report(L4_REPO, delivery, "in_progress")
    await world.report(L4_REPO, delivery, "completed", "failure")
    assert world.sandbox.reruns(L4_REPO) == []
    assert world.latest(CHECK)["output"]["title"] == "Re-running to confirm"

    world.sandbox.set_run_status(L4_REPO, RUN_ID, "completed", "failure")
    report = await world.settle()

    assert report.handled[RERUN_QUEUE] == {"done": 1}
    (rerun,) = world.sandbox.reruns(L4_REPO)
    assert rerun.kind == "rerun-failed-jobs"
    await second_attempt(world, delivery, "success")
    assert world.latest(CHECK)["output"]["title"] == "Success (flaky)"


async def test_a_queued_re_run_github_refuses_fails_the_check(world: World) -> None:
    world.sandbox.add_workflow_run(L4_REPO, RUN_ID, status="in_progress", conclusion=None)
    delivery = await world.pull_request()
    await world.report(L4_REPO, delivery, "in_progress")
    await world.report(L4_REPO, delivery, "completed", "failure")
    world.sandbox.inject_fault("*/rerun-failed-jobs", status=404)

    await world.settle()

    check = world.latest(CHECK)
    assert (check["status"], check["conclusion"]) == ("completed", "failure")
    assert "re-running" not in check["output"]["summary"]
    assert world.sandbox.reruns(L4_REPO) == []


async def superseded_while_confirming(world: World) -> str:
    """The L4 test fails (its check waits for the confirming re-run), then a push
    supersedes the commit while another job of its dispatch runs."""
    delivery = await first_attempt_fails(world)
    building = await world.report(L4_REPO, delivery, "in_progress", job="build", run_id=RUN_ID + 1)
    assert building.status_code == 200
    await world.pull_request("synchronize", sha="c" * 40)
    await world.settle()
    return delivery


async def test_a_confirming_re_run_reporting_after_a_new_push_still_ends_the_check(
    world: World,
) -> None:
    """Found by the governance model: a push superseded the commit while its L4 check
    waited for the confirming re-run. Supersession cancels what still runs, not that
    check; the re-run's report, a superseded job's, then showed nothing upstream, and
    the blocking check stayed "Re-running to confirm" for good."""
    delivery = await superseded_while_confirming(world)
    assert world.latest(CHECK)["output"]["title"] == "Re-running to confirm"

    await second_attempt(world, delivery, "success")

    check = world.latest(CHECK)
    assert (check["status"], check["conclusion"]) == ("completed", "success")
    assert check["output"]["title"] == "Success (flaky)"


async def test_a_late_confirmed_failure_of_a_superseded_commit_tells_no_oncall(
    world: World,
) -> None:
    """Its check run ends red on the old commit, but the oncalls are not called to a
    commit the pull request has left (SPEC §15: a superseded job gets no comment)."""
    delivery = await superseded_while_confirming(world)

    await second_attempt(world, delivery, "failure")
    await world.settle()

    check = world.latest(CHECK)
    assert (check["status"], check["conclusion"]) == ("completed", "failure")
    assert world.comments() == []

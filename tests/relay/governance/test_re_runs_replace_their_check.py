"""A re-run replaces the check run its run shows, whatever the level is by then
(SPEC §10.2: the HUD row and the check run agree on the conclusion).

Found by the governance model (`tests/relay/test_governance_model.py`): an L4 job
passed, its backend was overridden to L2, and a re-run of it timed out — the PR kept
showing the first attempt's green check while the HUD said `timed_out`.
"""

from __future__ import annotations

from datetime import timedelta

from tests.relay import callback_harness, checks_harness
from tests.relay.checks_harness import ALLOWLIST, L3_REPO, L4_REPO, RUN_ID, World
from tests.relay.governance.steps import run_job

from crcr.relay.allowlist.model import Level, parse_allowlist

opener, signing_key = callback_harness.opener, callback_harness.signing_key
sandbox_app, world = checks_harness.sandbox_app, checks_harness.world
__all__ = ["sandbox_app", "world"]

CHECK = f"crcr/{L4_REPO}/ci/test"


async def overridden_to_l2(world: World) -> None:
    governance = world.runtime.governance
    assert governance is not None
    await governance.set_override(
        parse_allowlist(ALLOWLIST), L4_REPO, Level.L2, timedelta(days=1), "maintenance", "oncall"
    )


async def test_a_re_run_after_an_override_replaces_the_green_check_it_had(world: World) -> None:
    delivery = await world.pull_request()
    await run_job(world, L4_REPO, delivery, "success")
    assert world.latest(CHECK)["conclusion"] == "success"
    await overridden_to_l2(world)

    await run_job(world, L4_REPO, delivery, "timed_out", run_attempt=2)

    assert (world.latest(CHECK)["status"], world.latest(CHECK)["conclusion"]) == (
        "completed",
        "timed_out",
    )


async def test_a_new_run_after_an_override_still_gets_no_check_run(world: World) -> None:
    """The override itself keeps working: only the runs a commit shows are followed."""
    delivery = await world.pull_request()
    await run_job(world, L4_REPO, delivery, "success")
    await overridden_to_l2(world)

    await run_job(world, L4_REPO, delivery, "failure", run_id=RUN_ID + 1)

    assert [run["conclusion"] for run in world.check_runs(CHECK)] == [None, "success"]


async def test_a_label_backfills_each_jobs_latest_run_alone(world: World) -> None:
    """Found by the governance model: a job passed, its re-run timed out, then the PR was
    labelled, and the backfill created a check run per run in the store's order, so the
    first attempt's green one came last and stood as the check. Attempts 9 and 10: the
    key order puts 10 first."""
    check = f"crcr/{L3_REPO}/ci/test"
    delivery = await world.pull_request()  # unlabelled: the L3 jobs get no check run yet
    await run_job(world, L3_REPO, delivery, "success", run_attempt=9)
    await run_job(world, L3_REPO, delivery, "timed_out", run_attempt=10)
    assert world.check_runs(check) == []

    await world.label()

    runs = world.check_runs(check)
    assert [(run["status"], run["conclusion"]) for run in runs] == [("completed", "timed_out")]

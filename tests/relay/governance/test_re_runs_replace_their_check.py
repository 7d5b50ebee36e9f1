"""A re-run replaces the check run its run shows, whatever the level is by then
(SPEC §10.2: the HUD row and the check run agree on the conclusion).

Found by the governance model (`tests/relay/test_governance_model.py`): an L4 job
passed, its backend was overridden to L2, and a re-run of it timed out — the PR kept
showing the first attempt's green check while the HUD said `timed_out`.
"""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

from tests.relay import callback_harness, checks_harness
from tests.relay.callback_harness import StoreOpener
from tests.relay.checks_harness import (
    ALLOWLIST,
    L3_REPO,
    L4_REPO,
    RUN_ID,
    UPSTREAM,
    World,
    installed_sandbox,
    open_world,
)
from tests.relay.governance.steps import ALLOWLIST_PATH, BLOB_URL, merge_allowlist, run_job

from crcr.relay.allowlist.model import Level, parse_allowlist
from crcr.relay.checks.open_checks import WATCH_SLACK
from crcr.sandbox.github_identity import SandboxApp
from crcr.sandbox.oidc_issuer import SigningKey

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


async def test_a_re_run_failing_after_a_merged_demotion_ends_when_no_confirmation_comes(
    opener: StoreOpener, tmp_path: Path, sandbox_app: SandboxApp, signing_key: SigningKey
) -> None:
    """Found by the governance model: the re-run's check is published at L4 (the level its
    run's check was shown at) and asks for the confirming re-run, but the job is recorded
    at L3 after the merged demotion, so the watch took it for a job confirming nothing
    and published "Re-running to confirm" again, for good."""
    ahead = [0.0]
    sandbox = installed_sandbox(sandbox_app)
    sandbox.add_file(UPSTREAM, ALLOWLIST_PATH, ALLOWLIST)
    clock = lambda: time.time() + ahead[0]  # noqa: E731
    async with open_world(opener, tmp_path, sandbox, signing_key, BLOB_URL, clock=clock) as world:
        world.runtime.sweeper.extra_steps.clear()
        delivery = await world.pull_request()
        await run_job(world, L4_REPO, delivery, "success")
        demoted = ALLOWLIST.replace(f"  - {L4_REPO}: oncall1, oncall2\n", "")
        demoted = demoted.replace("  xpu:\n", f"  xpu:\n    {L4_REPO}: [oncall1]\n")
        await merge_allowlist(world, demoted)
        assert (await world.runtime.allowlist()).level_of(L4_REPO) == Level.L3
        world.sandbox.add_workflow_run(L4_REPO, RUN_ID, status="completed", conclusion="failure")
        await run_job(world, L4_REPO, delivery, "failure", run_attempt=2)
        assert world.latest(CHECK)["output"]["title"] == "Re-running to confirm"

        ahead[0] += world.runtime.settings.zombie_timeout + WATCH_SLACK + 60
        await world.settle()

        check = world.latest(CHECK)
        assert (check["status"], check["conclusion"]) == ("completed", "failure")

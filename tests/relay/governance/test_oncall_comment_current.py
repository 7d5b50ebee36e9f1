"""The oncall comment always shows the latest state of a backend's jobs on a PR
(SPEC §10.2 invariant 2; issue 29 item 2).

Updated on recovery whatever the backend's level is by then, one row per job (check
name), never one per run. The real relay over the sandbox GitHub, on Redis and SQLite.
"""

from __future__ import annotations

from pathlib import Path

from tests.relay import callback_harness, checks_harness
from tests.relay.callback_harness import StoreOpener
from tests.relay.checks_harness import (
    ALLOWLIST,
    DEVICE_LABEL,
    HEAD_SHA,
    L2_REPO,
    L3_REPO,
    L4_REPO,
    PR_NUMBER,
    RUN_ID,
    World,
    open_world,
)
from tests.relay.governance.steps import BLOB_URL, blob_world, demote, merge_allowlist, run_job

from crcr.relay.allowlist.model import Level
from crcr.sandbox.oidc_issuer import SigningKey
from crcr.stores.state import LeasedItem

opener, signing_key = callback_harness.opener, callback_harness.signing_key
sandbox_app, world = checks_harness.sandbox_app, checks_harness.world
__all__ = ["blob_world", "sandbox_app", "world"]

JOBS = [f"job-{n}" for n in range(8)]


def check_name(repo: str, job: str) -> str:
    return f"crcr/{repo}/ci/{job}"


def only_comment(world: World) -> str:
    (comment,) = world.comments()
    return str(comment["body"])


async def test_jobs_passing_after_the_demotion_clear_the_comment(world: World) -> None:
    """Issue 29 item 2: before the fix the comment kept listing the 8 failures."""
    delivery = await world.pull_request(labels=(DEVICE_LABEL,))
    for job in JOBS:
        await run_job(world, L3_REPO, delivery, "failure", job=job)
    await world.settle()
    body = only_comment(world)
    assert all(check_name(L3_REPO, job) in body for job in JOBS)

    await demote(world, L3_REPO)
    for job in JOBS[:3]:
        await run_job(world, L3_REPO, delivery, "success", job=job, run_attempt=2)
    await world.settle()

    body = only_comment(world)
    assert "has failing checks" in body
    assert [job for job in JOBS if check_name(L3_REPO, job) in body] == JOBS[3:]

    for job in JOBS[3:]:
        await run_job(world, L3_REPO, delivery, "success", job=job, run_attempt=2)
    await world.settle()

    body = only_comment(world)
    assert "checks pass again" in body
    assert not any(check_name(L3_REPO, job) in body for job in JOBS)


async def test_a_job_failing_again_while_demoted_stays_in_the_comment(world: World) -> None:
    delivery = await world.pull_request(labels=(DEVICE_LABEL,))
    await run_job(world, L3_REPO, delivery, "failure", job="build")
    await run_job(world, L3_REPO, delivery, "failure", job="lint")
    await world.settle()
    await demote(world, L3_REPO)

    await run_job(world, L3_REPO, delivery, "success", job="build", run_attempt=2)
    await run_job(world, L3_REPO, delivery, "timed_out", job="lint", run_attempt=2)
    await world.settle()

    body = only_comment(world)
    assert check_name(L3_REPO, "build") not in body
    assert f"| `{check_name(L3_REPO, 'lint')}` | timed_out |" in body


async def test_one_row_per_job_however_many_runs_it_had(world: World) -> None:
    """Issue 29 item 2, L4: before the fix the same check name was listed once per run."""
    delivery = await world.pull_request()  # GitHub refuses the re-runs: each fails at once
    runs = range(RUN_ID, RUN_ID + 4)
    for run_id in runs:
        await run_job(world, L4_REPO, delivery, "failure", run_id=run_id)
    await world.settle()

    body = only_comment(world)
    assert body.count(check_name(L4_REPO, "test")) == 1
    assert f"run {runs[-1]}" in body

    await run_job(world, L4_REPO, delivery, "success", run_id=runs[-1] + 1)
    await world.settle()

    assert "checks pass again" in only_comment(world)


def demoted_to_l2(allowlist: str) -> str:
    """The allowlist once `L3_REPO`'s demotion pull request merged: it is at L2."""
    demoted = allowlist.replace(f"    {L3_REPO}: [xpu-oncall]\n", "")
    demoted = demoted.replace(f"  - {L2_REPO}\n", f"  - {L2_REPO}\n  - {L3_REPO}: [xpu-oncall]\n")
    assert f"  - {L3_REPO}: [xpu-oncall]" in demoted and "    " + L3_REPO not in demoted
    return demoted


async def test_the_comment_follows_a_backend_moved_below_l3_by_a_merged_demotion(
    blob_world: World,
) -> None:
    """Recovery updates the comment whatever the level is by then, L2 included."""
    world = blob_world
    delivery = await world.pull_request(labels=(DEVICE_LABEL,))
    await run_job(world, L3_REPO, delivery, "failure", job="build")
    await world.settle()
    assert check_name(L3_REPO, "build") in only_comment(world)

    # The demotion pull request merges: the backend is at L2 from now on.
    await merge_allowlist(world, demoted_to_l2(ALLOWLIST))
    assert (await world.runtime.allowlist()).level_of(L3_REPO) == Level.L2
    await run_job(world, L3_REPO, delivery, "success", job="build", run_attempt=2)
    await world.settle()

    # The re-run replaces the red check run the commit shows (the model test found the
    # check red over a green re-run); a new run at L2 gets none.
    check = world.latest(check_name(L3_REPO, "build"))
    assert (check["status"], check["conclusion"]) == ("completed", "success")
    assert "checks pass again" in only_comment(world)
    checks_before = len(world.check_runs())
    await run_job(world, L3_REPO, delivery, "success", job="build", run_id=RUN_ID + 1)
    assert len(world.check_runs()) == checks_before


async def test_a_comment_one_instance_posted_is_edited_after_another_instances_callback(
    blob_world: World, opener: StoreOpener, tmp_path: Path, signing_key: SigningKey
) -> None:
    """Two relays sharing the state store: instance A tells the oncalls, the backend
    moves to L2, and a new passing run reaches instance B. B's callback learns of A's
    comment in its transition's round trip, and has it edited."""
    a = blob_world
    delivery = await a.pull_request(labels=(DEVICE_LABEL,))
    await run_job(a, L3_REPO, delivery, "failure", job="build")
    await a.settle()
    assert check_name(L3_REPO, "build") in only_comment(a)
    await merge_allowlist(a, demoted_to_l2(ALLOWLIST))

    (tmp_path / "b").mkdir()
    async with open_world(opener, tmp_path / "b", a.sandbox, signing_key, BLOB_URL) as b:
        b.runtime.sweeper.extra_steps.clear()
        assert (await b.runtime.allowlist()).level_of(L3_REPO) == Level.L2
        # A new run, not a re-run: no check run at L2, so only the comment follows it.
        await run_job(b, L3_REPO, delivery, "success", job="build", run_id=RUN_ID + 1)
        await b.settle()

    body = only_comment(a)
    assert "checks pass again" in body
    assert check_name(L3_REPO, "build") not in body


def without_l3_repo(allowlist: str) -> str:
    """The allowlist once `L3_REPO`'s entry is deleted on main (revocation)."""
    removed = allowlist.replace(f"L3:\n  xpu:\n    {L3_REPO}: [xpu-oncall]\n", "")
    assert L3_REPO not in removed
    return removed


async def test_a_recovery_the_backend_left_the_allowlist_before_is_still_shown(
    blob_world: World,
) -> None:
    """The governance model found it: a job passed on its re-run, its backend was removed
    before the sweeper edited the comment, and the comment went on listing the failure
    (the edit needed oncalls to mention, and there were none any more)."""
    world = blob_world
    delivery = await world.pull_request(labels=(DEVICE_LABEL,))
    await run_job(world, L3_REPO, delivery, "failure", job="build")
    await run_job(world, L3_REPO, delivery, "failure", job="lint")
    await world.settle()
    assert check_name(L3_REPO, "build") in only_comment(world)

    await run_job(world, L3_REPO, delivery, "success", job="build", run_attempt=2)
    await merge_allowlist(world, without_l3_repo(ALLOWLIST))
    await world.settle()

    body = only_comment(world)
    assert check_name(L3_REPO, "build") not in body
    assert f"| `{check_name(L3_REPO, 'lint')}` | failure |" in body
    assert "@xpu-oncall" not in body  # an edit notifies nobody; the entry names nobody now
    assert body.splitlines()[3].startswith(f"`{L3_REPO}` reported failing jobs")

    await run_job(world, L3_REPO, delivery, "success", job="lint", run_attempt=2)
    assert "checks pass again" not in only_comment(world)  # ignored: off the allowlist


async def test_a_re_run_a_new_push_superseded_no_longer_shows_as_failing(world: World) -> None:
    """Found by the governance model: a job failed (the comment listed it), its re-run
    started, and a push superseded it. A superseded job tells no oncall (SPEC §15), so
    nothing edited the comment, which went on listing the job as failing although its
    latest run was cancelled."""
    delivery = await world.pull_request(labels=(DEVICE_LABEL,))
    await run_job(world, L3_REPO, delivery, "failure")
    await world.settle()
    assert check_name(L3_REPO, "test") in only_comment(world)

    re_run = await world.report(L3_REPO, delivery, "in_progress", run_attempt=2)
    assert re_run.status_code == 200
    await world.pull_request("synchronize", sha="c" * 40, labels=(DEVICE_LABEL,))
    await world.settle()

    assert world.latest(check_name(L3_REPO, "test"))["conclusion"] == "cancelled"
    body = only_comment(world)
    assert check_name(L3_REPO, "test") not in body
    assert "checks pass again" in body


async def test_an_older_commits_item_handled_late_leaves_the_newer_commits_listing(
    world: World,
) -> None:
    """The comment shows a backend's jobs on the newest commit it was sent. An item of
    the commit a push superseded, handled after the new head's (a superseded job's late
    edit, a retried item), put the older commit's failures back over the newer ones."""
    first = await world.pull_request(labels=(DEVICE_LABEL,))
    await run_job(world, L3_REPO, first, "failure", job="build")
    await world.settle()
    newer_sha = "c" * 40
    newer = await world.pull_request("synchronize", sha=newer_sha, labels=(DEVICE_LABEL,))
    await run_job(world, L3_REPO, newer, "failure", job="lint", run_id=RUN_ID + 1)
    await world.settle()
    assert check_name(L3_REPO, "lint") in only_comment(world)
    assert check_name(L3_REPO, "build") not in only_comment(world)

    # The older commit's failure, as its item carried it, handled only now.
    ((job_key, summary),) = (await world.runtime.store.job_summaries(HEAD_SHA, L3_REPO)).items()
    payload = {
        "recovered": False,
        "repo": L3_REPO,
        "head_sha": HEAD_SHA,
        "pr_number": PR_NUMBER,
        "job_key": job_key,
        "summary": summary,
    }
    assert world.runtime.checks is not None
    await world.runtime.checks.oncall.handle_item(LeasedItem("late", payload, 0, 0.0, "lease"))

    body = only_comment(world)
    assert f"| `{check_name(L3_REPO, 'lint')}` | failure |" in body
    assert check_name(L3_REPO, "build") not in body
    assert newer_sha[:7] in body and HEAD_SHA[:7] not in body

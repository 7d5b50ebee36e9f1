"""Upstream check runs end to end (SPEC §7): the real app, real stores, the sandbox as GitHub.

A PR is opened → a backend reports → a check run appears on the upstream head SHA;
each later report supersedes it with a new one; L3 backends take part when a label
opts the PR in, whenever the label comes; zombies and GitHub outages still end in
exactly one check run per transition.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable

import pytest
from tests.relay import callback_harness, checks_harness
from tests.relay.checks_harness import (
    DEVICE_LABEL,
    HEAD_SHA,
    L2_REPO,
    L3_REPO,
    L4_REPO,
    PR_NUMBER,
    RUN_ID,
    UPSTREAM,
    World,
    run_url,
)

from crcr.relay.jobs.lifecycle import job_store_key

opener, signing_key = callback_harness.opener, callback_harness.signing_key
sandbox_app, world = checks_harness.sandbox_app, checks_harness.world

L4_TEST = f"crcr/{L4_REPO}/ci/test"
L3_TEST = f"crcr/{L3_REPO}/ci/test"


async def test_an_l4_job_gets_an_in_progress_then_a_completed_check_run(world: World) -> None:
    delivery = await world.pull_request("opened")

    started = await world.report(L4_REPO, delivery, "in_progress")

    assert started.status_code == 200, started.text
    running = world.latest(L4_TEST)
    assert running["head_sha"] == HEAD_SHA
    assert running["status"] == "in_progress"
    assert running["conclusion"] is None
    assert running["external_id"] == f"{RUN_ID}:{PR_NUMBER}"
    assert running["details_url"] == run_url(L4_REPO)
    assert running["output"]["title"] == "In progress"
    assert L4_REPO in running["output"]["summary"]
    assert run_url(L4_REPO) in running["output"]["summary"]

    finished = await world.report(L4_REPO, delivery, "completed", "success")

    assert finished.status_code == 200, finished.text
    runs = world.check_runs(L4_TEST)
    assert [(r["status"], r["conclusion"]) for r in runs] == [
        ("in_progress", None),
        ("completed", "success"),
    ]
    assert runs[-1]["output"]["title"] == "Success"


async def test_a_failing_l4_job_notifies_the_oncalls_in_one_comment_kept_current(
    world: World,
) -> None:
    delivery = await world.pull_request("opened")
    await world.report(L4_REPO, delivery, "in_progress")
    await world.report(L4_REPO, delivery, "completed", "failure")

    assert world.latest(L4_TEST)["conclusion"] == "failure"
    assert world.latest(L4_TEST)["output"]["title"] == "Failure"
    await world.settle()
    [comment] = world.comments()
    assert comment["body"].startswith(f"<!-- crcr-oncall:{L4_REPO} -->")
    assert "@oncall1 @oncall2" in comment["body"]
    assert L4_TEST in comment["body"]

    await world.report(L4_REPO, delivery, "in_progress", job="lint")
    await world.report(L4_REPO, delivery, "completed", "failure", job="lint")
    await world.settle()

    [updated] = world.comments()
    assert updated["id"] == comment["id"]
    assert L4_TEST in updated["body"]
    assert f"crcr/{L4_REPO}/ci/lint" in updated["body"]


async def test_hostile_names_reach_the_pr_only_as_code_and_mention_only_the_oncalls(
    world: World,
) -> None:
    hostile_job = "build\n\n# Pwned @victim @org/team ![x](https://evil.example/x.png)"
    hostile_workflow = "ci @someone\n<img src=https://evil.example/y.png>"
    delivery = await world.pull_request("opened")
    for status, conclusion in (("in_progress", None), ("completed", "failure")):
        answer = await world.report(
            L4_REPO, delivery, status, conclusion, job=hostile_job, workflow=hostile_workflow
        )
        assert answer.status_code == 200, answer.text
    await world.settle()

    [comment] = world.comments()
    summaries = [run["output"]["summary"] for run in world.check_runs()]
    for markdown in (comment["body"], *summaries):
        rendered = re.sub(r"`[^`\n]*`", "", markdown)  # outside inline code
        assert set(re.findall(r"@[\w-]+(?:/[\w-]+)?", rendered)) <= {"@oncall1", "@oncall2"}
        assert "![" not in rendered and "<img" not in rendered
        assert not [line for line in markdown.splitlines() if "Pwned" in line and "`" not in line]
    assert "@oncall1 @oncall2" in comment["body"]
    assert [line for line in comment["body"].splitlines() if line.startswith("#")] == [
        f"### crcr: `{L4_REPO}` has failing checks"
    ]


async def test_a_passing_job_notifies_nobody(world: World) -> None:
    delivery = await world.pull_request("opened")
    await world.report(L4_REPO, delivery, "in_progress")
    await world.report(L4_REPO, delivery, "completed", "success")
    await world.settle()

    assert world.comments() == []


async def test_an_l2_backend_never_gets_a_check_run(world: World) -> None:
    delivery = await world.pull_request("opened", labels=(DEVICE_LABEL,))
    await world.report(L2_REPO, delivery, "in_progress")
    await world.report(L2_REPO, delivery, "completed", "failure")
    await world.settle()

    assert world.check_runs() == []
    assert world.comments() == []


async def test_concurrent_identical_callbacks_make_one_check_run(world: World) -> None:
    delivery = await world.pull_request("opened")
    body = world.callback_body(L4_REPO, delivery, "in_progress")

    answers = await asyncio.gather(*(world.post_callback(L4_REPO, body) for _ in range(5)))
    await world.settle()

    assert sorted(a.json()["status"] for a in answers) == ["accepted"] + ["duplicate"] * 4
    assert len(world.check_runs(L4_TEST)) == 1


# --- L3: the device label, in every order ---------------------------------------------


async def test_l3_label_before_dispatch(world: World) -> None:
    delivery = await world.pull_request("opened", labels=(DEVICE_LABEL,))

    await world.report(L3_REPO, delivery, "in_progress")

    assert world.latest(L3_TEST)["status"] == "in_progress"


async def test_l3_without_the_label_gets_no_check_run(world: World) -> None:
    delivery = await world.pull_request("opened", labels=("ciflow/crcr/other",))
    await world.report(L3_REPO, delivery, "in_progress")
    await world.report(L3_REPO, delivery, "completed", "failure")
    await world.settle()

    assert world.check_runs() == []
    assert world.comments() == []


async def test_l3_label_while_running_backfills_an_in_progress_check_run(world: World) -> None:
    delivery = await world.pull_request("opened")
    await world.report(L3_REPO, delivery, "in_progress")
    await world.report(L3_REPO, delivery, "in_progress", job="build")
    assert world.check_runs() == []

    labeled = await world.label()

    assert labeled.json()["backfilled"] == 2
    assert world.latest(L3_TEST)["status"] == "in_progress"
    assert world.latest(f"crcr/{L3_REPO}/ci/build")["status"] == "in_progress"

    await world.report(L3_REPO, delivery, "completed", "success")

    assert world.latest(L3_TEST)["conclusion"] == "success"
    await world.settle()
    assert len(world.check_runs()) == 3


async def test_l3_label_after_completion_creates_the_completed_check_run(world: World) -> None:
    delivery = await world.pull_request("opened")
    await world.report(L3_REPO, delivery, "in_progress")
    await world.report(L3_REPO, delivery, "completed", "failure")
    assert world.check_runs() == []

    await world.label()
    await world.settle()

    [only] = world.check_runs()
    assert (only["name"], only["status"], only["conclusion"]) == (L3_TEST, "completed", "failure")
    [comment] = world.comments()
    assert "@xpu-oncall" in comment["body"]


async def test_a_second_label_event_creates_nothing_new(world: World) -> None:
    delivery = await world.pull_request("opened")
    await world.report(L3_REPO, delivery, "in_progress")
    await world.label()

    await world.label()
    await world.settle()

    assert len(world.check_runs(L3_TEST)) == 1


async def test_a_label_on_another_commit_backfills_nothing(world: World) -> None:
    delivery = await world.pull_request("opened")
    await world.report(L3_REPO, delivery, "in_progress")

    labeled = await world.label(sha="d" * 40)

    assert labeled.json()["backfilled"] == 0
    assert world.check_runs() == []


async def test_reopen_with_stale_labels_still_gets_check_runs_through_the_flag(
    world: World,
) -> None:
    await world.label()
    # The reopened payload's labels do not show the label (stale), the flag does.
    delivery = await world.pull_request("reopened", labels=())

    await world.report(L3_REPO, delivery, "in_progress")

    assert world.latest(L3_TEST)["status"] == "in_progress"


# --- pushes, zombies, outages ---------------------------------------------------------


async def test_a_push_gets_an_l4_check_run_on_the_pushed_sha_and_no_comment(
    world: World,
) -> None:
    pushed = "e" * 40
    delivery = await world.push(pushed)
    await world.report(L4_REPO, delivery, "in_progress")
    await world.report(L4_REPO, delivery, "completed", "failure")
    await world.report(L3_REPO, delivery, "in_progress")
    await world.settle()

    [_, failed] = world.check_runs()
    assert (failed["name"], failed["head_sha"]) == (L4_TEST, pushed)
    assert failed["external_id"] == f"{RUN_ID}:0"
    assert world.sandbox.comments(UPSTREAM, 0) == []


async def test_a_zombie_gets_a_timed_out_check_run_and_the_late_truth_wins(
    world: World,
) -> None:
    delivery = await world.pull_request("opened")
    await world.report(L4_REPO, delivery, "in_progress")
    key = job_store_key(delivery, L4_REPO, str(RUN_ID), "1", "test")
    await world.runtime.store.track_deadline(key, 0.0)  # overdue now

    report = await world.settle()

    assert report.zombies_finalised == 1
    timed_out = world.latest(L4_TEST)
    assert (timed_out["status"], timed_out["conclusion"]) == ("completed", "timed_out")
    assert timed_out["output"]["title"] == "Timed out"

    await world.report(L4_REPO, delivery, "completed", "success")

    assert world.latest(L4_TEST)["conclusion"] == "success"


class RelayDied(BaseException):
    """The process handling a callback ends here: not an error any handler catches."""


async def test_a_completion_whose_relay_died_before_the_hooks_still_completes_its_check_run(
    world: World,
) -> None:
    delivery = await world.pull_request("opened")
    await world.report(L4_REPO, delivery, "in_progress")
    await world.settle()
    assert world.latest(L4_TEST)["status"] == "in_progress"

    async def die(_: object) -> None:
        raise RelayDied

    world.runtime.callback.on_accepted.insert(0, die)
    with pytest.raises(RelayDied):
        await world.report(L4_REPO, delivery, "completed", "failure")
    world.runtime.callback.on_accepted.remove(die)
    key = job_store_key(delivery, L4_REPO, str(RUN_ID), "1", "test")
    await world.runtime.store.track_deadline(key, 0.0)  # its grace has run out

    report = await world.settle()

    assert (report.completions_redone, report.zombies_finalised) == (1, 0)
    finished = world.latest(L4_TEST)
    assert (finished["status"], finished["conclusion"]) == ("completed", "failure")
    assert (await world.settle()).completions_redone == 0


async def test_a_github_502_is_retried_from_the_queue_and_created_exactly_once(
    world: World,
) -> None:
    world.checks.inline_grace = 0.0  # the queue may take the item on the next pass
    world.sandbox.inject_fault(f"/repos/{UPSTREAM}/check-runs", method="POST", status=502, times=1)
    delivery = await world.pull_request("opened")

    answer = await world.report(L4_REPO, delivery, "in_progress")

    assert answer.status_code == 200, answer.text
    assert world.check_runs() == []
    first = await world.settle()
    second = await world.settle()
    assert first.handled["checks"] == {"done": 1}
    assert "checks" not in second.handled
    assert len(world.check_runs(L4_TEST)) == 1
    assert len(world.sandbox.calls("POST", f"/repos/{UPSTREAM}/check-runs")) == 2


async def test_an_inline_success_leaves_the_queue_nothing_to_create(world: World) -> None:
    world.checks.inline_grace = 0.0
    delivery = await world.pull_request("opened")
    await world.report(L4_REPO, delivery, "in_progress")

    report = await world.settle()

    assert report.handled["checks"] == {"done": 1}
    assert len(world.check_runs(L4_TEST)) == 1


async def test_an_in_progress_item_retried_after_completion_is_skipped(world: World) -> None:
    world.checks.inline_grace = 0.0
    world.sandbox.inject_fault(f"/repos/{UPSTREAM}/check-runs", method="POST", status=502, times=1)
    delivery = await world.pull_request("opened")
    await world.report(L4_REPO, delivery, "in_progress")  # its check run fails inline
    await world.report(L4_REPO, delivery, "completed", "success")

    await world.settle()

    [only] = world.check_runs(L4_TEST)
    assert (only["status"], only["conclusion"]) == ("completed", "success")


async def test_an_in_progress_check_run_landing_after_completion_is_superseded_again(
    world: World,
) -> None:
    slow = world.sandbox.inject_fault(  # the create reaches GitHub late, so lands late
        f"/repos/{UPSTREAM}/check-runs", method="POST", hang=0.3, times=1
    )
    delivery = await world.pull_request("opened")
    starting = asyncio.create_task(world.report(L4_REPO, delivery, "in_progress"))
    await until(lambda: slow.applied == 1)
    await world.report(L4_REPO, delivery, "completed", "failure")
    await starting
    assert [r["status"] for r in world.check_runs(L4_TEST)] == ["completed", "in_progress"]

    await world.settle()

    assert world.latest(L4_TEST)["conclusion"] == "failure"


async def until(condition: Callable[[], bool], within: float = 5.0) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)

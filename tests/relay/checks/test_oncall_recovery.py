"""The oncall comment stays true and single (SPEC §7): the real app, real stores, the sandbox.

A job that passes on its re-run takes its row out of the comment; when no job fails any
more, the comment says so, with when. However many sweepers handle the same queue items
at once, the PR gets one comment; a worker that died after claiming it is replaced.
"""

from __future__ import annotations

import asyncio
import time
from contextlib import AsyncExitStack
from dataclasses import replace

from tests.relay import callback_harness, checks_harness
from tests.relay.callback_harness import StoreOpener, sandbox_github_client
from tests.relay.checks_harness import DEVICE_LABEL, L3_REPO, PR_NUMBER, UPSTREAM, World

from crcr.relay.checks.oncall_comments import (
    COMMENT_CLAIMS,
    ONCALL_QUEUE,
    OncallNotifier,
    comment_key,
    oncall_marker,
)
from crcr.relay.jobs.queue_handler import HandlerResult
from crcr.sandbox.webhooks.objects import user
from crcr.stores.state import LeasedItem

opener, signing_key = callback_harness.opener, callback_harness.signing_key
sandbox_app, world = checks_harness.sandbox_app, checks_harness.world

L3_TEST, L3_LINT, L3_DOCS = (f"crcr/{L3_REPO}/ci/{job}" for job in ("test", "lint", "docs"))
SWEEPERS = 8


async def run_job(world: World, delivery: str, job: str, conclusion: str, attempt: int = 1) -> None:
    """One attempt of an L3 job: in_progress, then completed with `conclusion`."""
    for status, concluded in (("in_progress", None), ("completed", conclusion)):
        answer = await world.report(
            L3_REPO, delivery, status, concluded, job=job, run_attempt=attempt
        )
        assert answer.status_code == 200, answer.text


async def fail(world: World, delivery: str, job: str, attempt: int = 1) -> None:
    await run_job(world, delivery, job, "failure", attempt)


async def passes(world: World, delivery: str, job: str, attempt: int) -> None:
    await run_job(world, delivery, job, "success", attempt)


async def test_a_job_that_passes_on_its_rerun_leaves_the_comment_and_all_green_says_so(
    world: World,
) -> None:
    delivery = await world.pull_request("opened", labels=(DEVICE_LABEL,))
    await fail(world, delivery, "test")
    await fail(world, delivery, "lint")
    await world.settle()
    [comment] = world.comments()
    assert L3_TEST in comment["body"] and L3_LINT in comment["body"]
    assert "@xpu-oncall" in comment["body"]

    await passes(world, delivery, "test", attempt=2)
    await world.settle()

    [shrunk] = world.comments()
    assert shrunk["id"] == comment["id"]
    assert L3_LINT in shrunk["body"] and L3_TEST not in shrunk["body"]
    assert "has failing checks" in shrunk["body"]

    before = time.time()
    await passes(world, delivery, "lint", attempt=2)
    await world.settle()

    [green] = world.comments()
    assert green["id"] == comment["id"]
    assert green["body"].startswith(oncall_marker(L3_REPO))
    assert "checks pass again" in green["body"]
    assert "failing" not in green["body"] and "|" not in green["body"]
    assert time.strftime("%Y-%m-%d", time.gmtime(before)) in green["body"]
    assert " UTC" in green["body"]

    await fail(world, delivery, "lint", attempt=3)
    await world.settle()

    [again] = world.comments()
    assert again["id"] == comment["id"]
    assert L3_LINT in again["body"] and "has failing checks" in again["body"]


async def test_passing_jobs_on_a_pr_without_failures_queue_no_comment_work(world: World) -> None:
    delivery = await world.pull_request("opened", labels=(DEVICE_LABEL,))
    await passes(world, delivery, "test", attempt=1)
    await passes(world, delivery, "lint", attempt=1)

    report = await world.settle()

    assert ONCALL_QUEUE not in report.handled
    assert world.comments() == []


async def queued_failures(world: World, jobs: tuple[str, ...]) -> list[LeasedItem]:
    """Fail `jobs` and take their queued oncall items from the queue, unhandled."""
    delivery = await world.pull_request("opened", labels=(DEVICE_LABEL,))
    for job in jobs:
        await fail(world, delivery, job)
    items = await world.runtime.store.lease(ONCALL_QUEUE, lease_seconds=600, limit=50)
    assert len(items) == len(jobs)
    return items


async def notifiers(
    stack: AsyncExitStack, world: World, opener: StoreOpener, count: int
) -> list[OncallNotifier]:
    """`count` relay instances' notifiers: each its own store connection and GitHub client."""
    opened = []
    for _ in range(count):
        store = await opener.open()
        stack.push_async_callback(store.close)
        # The workers' calls overlap on purpose and none is retried (max_retries=0): on a
        # loaded machine one can wait past the harness's 0.5 s timeout, which is not what
        # this scenario is about.
        github = sandbox_github_client(world.sandbox, store, timeout=10.0)
        stack.push_async_callback(github.aclose)
        opened.append(
            OncallNotifier(
                store, github, world.runtime.allowlist, UPSTREAM, ttl=3600, max_retries=0
            )
        )
    return opened


async def handle_until_settled(notifier: OncallNotifier, item: LeasedItem, worker: int) -> None:
    """What a sweeper does with its copy of the item: retry until it is settled."""
    deadline = time.monotonic() + 30
    for attempt in range(1000):
        leased = replace(item, lease_token=f"worker-{worker}-attempt-{attempt}")
        if await notifier.handle_item(leased) is not HandlerResult.RETRY:
            return
        assert time.monotonic() < deadline, "the item was never settled"
        await asyncio.sleep(0.02)


async def test_eight_sweepers_handling_the_same_failures_at_once_post_one_comment(
    world: World, opener: StoreOpener
) -> None:
    items = await queued_failures(world, ("test", "lint", "docs"))
    # Every GitHub answer takes a while, so that the workers overlap at each step.
    world.sandbox.inject_fault(path="*/comments*", latency=0.05)

    async with AsyncExitStack() as stack:
        workers = await notifiers(stack, world, opener, SWEEPERS)
        await asyncio.gather(
            *(
                handle_until_settled(notifier, item, worker)
                for worker, notifier in enumerate(workers)
                for item in items
            )
        )

    [comment] = world.comments()
    for name in (L3_TEST, L3_LINT, L3_DOCS):
        assert name in comment["body"]
    posts = world.sandbox.calls("POST", f"/repos/{UPSTREAM}/issues/*/comments")
    assert len(posts) == 1
    key = comment_key(UPSTREAM, PR_NUMBER, L3_REPO)
    assert await world.runtime.store.leased_value(COMMENT_CLAIMS, key) == str(comment["id"])


async def test_a_worker_that_died_after_posting_is_replaced_without_a_second_comment(
    world: World,
) -> None:
    [item] = await queued_failures(world, ("test",))
    store, checks = world.runtime.store, world.checks
    key = comment_key(UPSTREAM, PR_NUMBER, L3_REPO)
    # The dead worker claimed the comment and posted it, and died before settling its id.
    assert (await store.claim_lease(COMMENT_CLAIMS, key, "dead", lease=0.3, ttl=600)).held
    await world.runtime.github.create_issue_comment(
        UPSTREAM, PR_NUMBER, oncall_marker(L3_REPO) + "\nposted by the dead worker"
    )
    assert await checks.oncall.handle_item(item) is HandlerResult.RETRY  # its lease is live

    async def settled() -> bool:
        return (
            await checks.oncall.handle_item(replace(item, lease_token="next")) is HandlerResult.DONE
        )

    deadline = time.monotonic() + 10
    while not await settled():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)

    [comment] = world.comments()
    assert L3_TEST in comment["body"] and "posted by the dead worker" not in comment["body"]
    assert await store.leased_value(COMMENT_CLAIMS, key) == str(comment["id"])


async def test_another_bots_comment_with_the_marker_is_not_taken_for_ours(
    world: World,
) -> None:
    # Issue 33 item 22: any bot (another App, github-actions in a workflow) could post
    # the hidden marker first; the relay took that comment as its own, tried to edit
    # it, and the oncalls were never told.
    [item] = await queued_failures(world, ("test",))
    foreign = await world.runtime.github.create_issue_comment(
        UPSTREAM, PR_NUMBER, oncall_marker(L3_REPO) + "\nnothing to see here"
    )
    [stored] = world.sandbox.repo(UPSTREAM).comments[PR_NUMBER]
    stored["user"] = foreign["user"] = user("someone-elses-app[bot]", kind="Bot")

    assert await world.checks.oncall.handle_item(item) is HandlerResult.DONE

    theirs, ours = world.comments()
    assert theirs == foreign
    assert L3_TEST in ours["body"] and ours["user"]["login"].endswith("[bot]")
    key = comment_key(UPSTREAM, PR_NUMBER, L3_REPO)
    assert await world.runtime.store.leased_value(COMMENT_CLAIMS, key) == str(ours["id"])

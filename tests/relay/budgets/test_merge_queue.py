"""The merge queue (SPEC §15 "Merge queue"), on two relay instances sharing a store.

A merge group is dispatched to the L4 backend alone, which gets an in-progress check run
on the group's head SHA at once; a backend that never reports has it concluded
`neutral` at `CRCR_MERGE_QUEUE_DEADLINE` by whichever instance sweeps, so the queue is
never stalled; one that reports concludes it with its result; a destroyed group closes
its records.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from tests.relay import callback_harness
from tests.relay.callback_harness import Clock, StoreOpener
from tests.relay.checks_harness import (
    L2_REPO,
    L3_REPO,
    L4_REPO,
    RUN_ID,
    World,
    installed_sandbox,
    open_world,
    sandbox_app,
)

from crcr.relay.budgets.merge_queue import combined
from crcr.sandbox.github_identity import SandboxApp
from crcr.sandbox.github_state import SandboxGitHub
from crcr.sandbox.oidc_issuer import SigningKey
from crcr.sandbox.webhooks import merge_group_event

opener, signing_key = callback_harness.opener, callback_harness.signing_key
__all__ = ["sandbox_app"]

GROUP_SHA = "9e" * 20
CHECK = f"crcr/{L4_REPO}/merge_group"
DEADLINE = 1800


@pytest.fixture
def clock() -> Clock:
    return Clock()


@asynccontextmanager
async def two_instances(
    opener: StoreOpener,
    tmp_path: Path,
    sandbox: SandboxGitHub,
    signing_key: SigningKey,
    clock: Clock,
) -> AsyncIterator[tuple[World, World]]:
    async with (
        open_world(opener, tmp_path, sandbox, signing_key, clock=clock) as first,
        open_world(opener, tmp_path, sandbox, signing_key, clock=clock) as second,
    ):
        for world in (first, second):
            world.runtime.sweeper.extra_steps.clear()
            world.checks.inline_budget = 30.0
        yield first, second


async def _checks_requested(world: World) -> str:
    delivery = str(uuid.uuid4())
    response = await world.webhook("merge_group", merge_group_event(head_sha=GROUP_SHA), delivery)
    assert response.status_code == 200, response.text
    assert response.json()["dispatched"] == [L4_REPO]
    return delivery


async def test_a_silent_l4_backend_is_concluded_neutral_at_the_deadline(
    opener: StoreOpener,
    tmp_path: Path,
    sandbox_app: SandboxApp,
    signing_key: SigningKey,
    clock: Clock,
) -> None:
    sandbox = installed_sandbox(sandbox_app)
    async with two_instances(opener, tmp_path, sandbox, signing_key, clock) as (first, second):
        await _checks_requested(first)

        assert [d.event_type for d in sandbox.dispatches(L4_REPO)] == ["merge_group"]
        assert sandbox.dispatches(L2_REPO) == sandbox.dispatches(L3_REPO) == []
        opened = first.latest(CHECK)
        assert (opened["status"], opened["head_sha"]) == ("in_progress", GROUP_SHA)

        clock.advance(DEADLINE - 60)
        await second.settle()
        assert second.latest(CHECK)["status"] == "in_progress"

        clock.advance(61)
        await second.settle()
        concluded = second.latest(CHECK)
        assert (concluded["status"], concluded["conclusion"]) == ("completed", "neutral")
        assert concluded["output"]["title"] == "No result in time"
        await first.settle()
        assert len(first.check_runs(CHECK)) == 2  # concluded once, by one instance


async def test_a_reporting_backend_concludes_the_check_with_its_result(
    opener: StoreOpener,
    tmp_path: Path,
    sandbox_app: SandboxApp,
    signing_key: SigningKey,
    clock: Clock,
) -> None:
    sandbox = installed_sandbox(sandbox_app)
    async with two_instances(opener, tmp_path, sandbox, signing_key, clock) as (first, second):
        delivery = await _checks_requested(first)

        assert (await second.report(L4_REPO, delivery, "in_progress")).is_success
        assert (await second.report(L4_REPO, delivery, "completed", "success")).is_success
        clock.advance(DEADLINE + 1)
        await first.settle()

        assert first.latest(CHECK)["conclusion"] == "success"
        assert [run.get("conclusion") for run in first.check_runs(CHECK)] == [None, "success"]


async def test_a_group_concludes_with_the_worst_of_its_jobs_once_every_job_has_ended(
    opener: StoreOpener,
    tmp_path: Path,
    sandbox_app: SandboxApp,
    signing_key: SigningKey,
    clock: Clock,
) -> None:
    sandbox = installed_sandbox(sandbox_app)
    async with two_instances(opener, tmp_path, sandbox, signing_key, clock) as (first, second):
        delivery = await _checks_requested(first)
        shards = {"first": first, "second": second}
        for shard, world in shards.items():
            started = await world.report(L4_REPO, delivery, "in_progress", job=shard)
            assert started.is_success, started.text

        passed = await first.report(L4_REPO, delivery, "completed", "success", job="first")
        assert passed.is_success
        await first.settle()
        assert first.latest(CHECK)["status"] == "in_progress"  # the second shard still runs

        sandbox.add_workflow_run(L4_REPO, RUN_ID, status="completed", conclusion="failure")
        failed = await second.report(L4_REPO, delivery, "completed", "failure", job="second")
        assert failed.is_success
        await second.settle()
        await first.settle()
        assert [run.get("conclusion") for run in first.check_runs(CHECK)] == [None, "failure"]
        # The group's check does not wait for a confirming re-run, so none is asked for:
        # an L4 failure in a merge group costs the backend's hardware no second run.
        assert sandbox.reruns(L4_REPO) == []
        failed_job = first.latest(f"crcr/{L4_REPO}/ci/second")
        assert failed_job["conclusion"] == "failure"

        # A shard that starts late and passes changes nothing: the group has failed.
        late = "third"
        assert (await first.report(L4_REPO, delivery, "in_progress", job=late)).is_success
        done = await second.report(L4_REPO, delivery, "completed", "success", job=late)
        assert done.is_success
        clock.advance(DEADLINE + 1)
        await first.settle()
        await second.settle()
        assert [run.get("conclusion") for run in first.check_runs(CHECK)] == [None, "failure"]


def test_the_combined_conclusion_is_the_worst_one() -> None:
    assert combined(["success", "skipped", "success"]) == "skipped"
    assert combined(["success", "cancelled", "failure"]) == "failure"
    assert combined(["success", "something-new"]) == "something-new"
    assert combined(["neutral"]) == "neutral"


async def test_a_destroyed_group_closes_its_records_and_open_checks(
    opener: StoreOpener,
    tmp_path: Path,
    sandbox_app: SandboxApp,
    signing_key: SigningKey,
    clock: Clock,
) -> None:
    sandbox = installed_sandbox(sandbox_app)
    async with two_instances(opener, tmp_path, sandbox, signing_key, clock) as (first, second):
        delivery = await _checks_requested(first)

        gone = merge_group_event("destroyed", head_sha=GROUP_SHA, reason="dequeued")
        assert (await second.webhook("merge_group", gone)).status_code == 200

        closed = second.latest(CHECK)
        assert (closed["conclusion"], closed["output"]["title"]) == (
            "neutral",
            "Merge group destroyed",
        )
        late = await first.report(L4_REPO, delivery, "in_progress")
        assert late.status_code == 400
        clock.advance(DEADLINE + 1)
        await first.settle()
        assert len(first.check_runs(CHECK)) == 2

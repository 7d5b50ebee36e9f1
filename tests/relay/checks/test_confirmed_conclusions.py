"""Confirmed conclusions over the sandbox (SPEC §11): after a GitHub Actions job reports
`completed`, the relay asks GitHub's jobs API through the `confirm` queue, records the
answer on the HUD row, and turns a contradicted success of an L3/L4 job red.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from sqlalchemy import select
from tests.relay import callback_harness
from tests.relay.checks_harness import (
    L2_REPO,
    L4_REPO,
    RUN_ID,
    World,
    sandbox_app,
    world,
)

from crcr.hud.models import JobExecution
from crcr.relay.allowlist.model import Level
from crcr.relay.checks.confirmer import CONFIRM_QUEUE
from crcr.relay.jobs.dispatch import DispatchRecord, DispatchStatus, UpstreamContext
from crcr.relay.jobs.events import JobTransitioned
from crcr.relay.jobs.job import Job
from crcr.relay.jobs.lifecycle import JobState
from crcr.relay.sweeper.report import SweepReport
from crcr.sandbox.github_jobs import ActionsJob

opener, signing_key = callback_harness.opener, callback_harness.signing_key
__all__ = ["sandbox_app", "world"]

JOB_ID = RUN_ID * 10  # the harness reports check_run_id = run id x 10
CHECK = f"crcr/{L4_REPO}/ci/test"


@pytest.fixture(autouse=True)
def ask_at_once(world: World) -> None:
    assert world.runtime.confirmer is not None
    world.runtime.confirmer.delay = 0.0


def github_knows(world: World, repo: str, status: str, conclusion: str | None) -> None:
    world.sandbox.jobs.record(
        ActionsJob(
            id=JOB_ID,
            repo=repo,
            run_id=RUN_ID,
            run_attempt=1,
            name="test",
            workflow_name="ci",
            head_sha="d" * 40,
            created_at=world.sandbox.clock(),
            status=status,
            conclusion=conclusion,
        )
    )


async def job_reports(world: World, repo: str, conclusion: str) -> None:
    delivery = await world.pull_request()
    assert (await world.report(repo, delivery, "in_progress")).status_code == 200
    assert (await world.report(repo, delivery, "completed", conclusion)).status_code == 200


def hud_row(world: World, repo: str) -> Any:
    assert world.runtime.hud is not None
    with world.runtime.hud.engine.connect() as connection:
        rows = list(
            connection.execute(
                select(JobExecution.__table__).where(JobExecution.downstream_repo == repo)
            ).mappings()
        )
    (row,) = rows
    return row


async def test_a_contradicted_success_turns_the_l4_check_red_and_says_why(world: World) -> None:
    github_knows(world, L4_REPO, "completed", "failure")
    await job_reports(world, L4_REPO, "success")
    assert world.latest(CHECK)["conclusion"] == "success"

    await world.settle()

    row = hud_row(world, L4_REPO)
    assert (row["confirmed"], row["github_conclusion"]) == (False, "failure")
    assert row["conclusion"] == "success", "the report is kept, shown beside GitHub's word"
    check = world.latest(CHECK)
    assert (check["status"], check["conclusion"]) == ("completed", "failure")
    assert "GitHub records the job's conclusion as `failure`" in check["output"]["summary"]


async def test_an_agreeing_github_confirms_and_leaves_the_check_alone(world: World) -> None:
    github_knows(world, L4_REPO, "completed", "success")
    await job_reports(world, L4_REPO, "success")
    created = len(world.check_runs(CHECK))

    await world.settle()

    row = hud_row(world, L4_REPO)
    assert (row["confirmed"], row["github_conclusion"]) == (True, "success")
    assert len(world.check_runs(CHECK)) == created
    assert world.latest(CHECK)["conclusion"] == "success"


async def test_an_l2_job_is_confirmed_on_the_hud_only(world: World) -> None:
    github_knows(world, L2_REPO, "completed", "cancelled")
    await job_reports(world, L2_REPO, "success")

    await world.settle()

    row = hud_row(world, L2_REPO)
    assert (row["confirmed"], row["github_conclusion"]) == (False, "cancelled")
    assert world.check_runs(f"crcr/{L2_REPO}/ci/test") == []


async def test_while_github_still_runs_the_job_nothing_is_recorded_yet(world: World) -> None:
    github_knows(world, L4_REPO, "in_progress", None)
    await job_reports(world, L4_REPO, "success")

    report = await world.settle()

    assert report.handled[CONFIRM_QUEUE] == {"retry": 1}
    assert hud_row(world, L4_REPO)["confirmed"] is None
    assert world.latest(CHECK)["conclusion"] == "success"


def report_done(report: SweepReport) -> None:
    assert CONFIRM_QUEUE not in report.handled, "nothing left to ask"


async def test_a_job_github_does_not_know_stays_unconfirmed(world: World) -> None:
    await job_reports(world, L4_REPO, "success")

    first = await world.settle()

    assert first.handled[CONFIRM_QUEUE] == {"done": 1}

    assert report_done(await world.settle()) is None
    assert hud_row(world, L4_REPO)["confirmed"] is None
    assert (await world.runtime.store.queue_stats(CONFIRM_QUEUE)).depth == 0


async def test_a_completion_the_sweeper_redoes_is_confirmed_too(world: World) -> None:
    """A relay that died before its hooks ran: the sweeper's redo queues the question."""
    github_knows(world, L2_REPO, "completed", "failure")
    confirmer = world.runtime.confirmer
    assert confirmer is not None
    workflow = {"name": "ci", "job_name": "test", "check_run_id": str(JOB_ID)}
    context = UpstreamContext("pytorch/pytorch", "pull_request", "a" * 40, 1)
    job = Job(
        key="job-redone",
        state=JobState.COMPLETED,
        verified_repo=L2_REPO,
        level=Level.L2,
        dispatch=DispatchRecord("d", L2_REPO, DispatchStatus.DISPATCHED, context, 0.0),
        callback={"workflow": {**workflow, "conclusion": "success"}},
        in_progress_at=0.0,
        queue_time=None,
        issuer_kind="github",
        conclusion="success",
    )
    hud_body = {"trusted": {}, "untrusted": {}}

    def redone(**changes: Any) -> JobTransitioned:
        return JobTransitioned(replace(job, **changes), hud_body, source="sweeper")

    await confirmer.on_accepted(redone())
    await confirmer.on_accepted(redone(key="job-buildkite", issuer_kind="buildkite"))
    await confirmer.on_accepted(redone(key="job-zombie", state=JobState.TIMED_OUT))

    assert (await world.runtime.store.queue_stats(CONFIRM_QUEUE)).depth == 1


async def test_without_the_actions_permission_the_job_stays_unconfirmed(world: World) -> None:
    github_knows(world, L4_REPO, "completed", "failure")
    world.sandbox.inject_fault(
        "*/actions/jobs/*",
        status=403,
        body={"message": "Resource not accessible by integration"},
    )
    await job_reports(world, L4_REPO, "success")

    report = await world.settle()

    assert report.handled[CONFIRM_QUEUE] == {"done": 1}
    assert hud_row(world, L4_REPO)["confirmed"] is None
    assert world.latest(CHECK)["conclusion"] == "success"


async def test_a_github_outage_is_asked_again(world: World) -> None:
    github_knows(world, L4_REPO, "completed", "success")
    world.sandbox.inject_fault("*/actions/jobs/*", status=502)
    await job_reports(world, L4_REPO, "success")

    report = await world.settle()

    assert report.handled[CONFIRM_QUEUE] == {"retry": 1}
    assert hud_row(world, L4_REPO)["confirmed"] is None

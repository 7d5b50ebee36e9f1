"""What relay health reads from the results store: recent jobs, last reports, probe jobs.

Index-backed reads sized by the caller (`ix_hud_jobs_repo_event_activity` per backend
and event type), so the health view costs the same whatever the store's size.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, func, select

from crcr.hud.health.canary import ProbeJob
from crcr.hud.health.expected import expected_conclusion
from crcr.hud.health.nightly import NightlyRun
from crcr.hud.health.states import COUNTED_EVENTS, CompletedJob
from crcr.hud.models import ACTIVITY_ROWS, BACKENDS, JOBS, fixed

WINDOW_PER_ALERT_AFTER = 4
"""Rows read per job the state judges: enough to also hold the re-runs of those jobs."""


def recent_completed_jobs(
    engine: Engine,
    repo: str,
    alert_after: int,
    events: frozenset[str] = COUNTED_EVENTS,
    *,
    canary: bool = False,
) -> list[CompletedJob]:
    """The backend's newest completed jobs of `events` (default-branch, nightly), newest first.

    For the canary (`canary`), a job that ended as it should (an `xfail` that failed)
    reads as a success and one that did not as a failure: its state follows its probes'
    verdicts, not the failures it is made of.
    """
    finished = func.coalesce(JOBS.c.completed_at, JOBS.c.activity_at)
    query = (
        select(
            JOBS.c.delivery_id,
            JOBS.c.workflow_name,
            JOBS.c.job_name,
            JOBS.c.event_type,
            JOBS.c.run_attempt,
            JOBS.c.conclusion,
            JOBS.c.expected_conclusion,
            finished.label("finished"),
        )
        .where(
            JOBS.c.downstream_repo == repo,
            JOBS.c.event_type.in_([fixed(event) for event in sorted(events)]),
            JOBS.c.status == fixed("completed"),
            ACTIVITY_ROWS,
        )
        .order_by(JOBS.c.activity_at.desc())
        .limit(alert_after * WINDOW_PER_ALERT_AFTER)
    )
    with engine.connect() as connection:
        rows = connection.execute(query).all()
    return [
        CompletedJob(
            job=f"{row.delivery_id}\x00{row.workflow_name}\x00{row.job_name}",
            event_type=row.event_type,
            run_attempt=row.run_attempt,
            conclusion=_as_expected(row) if canary else row.conclusion,
            completed_at=row.finished,
        )
        for row in rows
    ]


def _as_expected(row: Any) -> str:
    """`success` when the canary's job ended as it should, else `failure`."""
    expected = expected_conclusion(row.job_name, row.expected_conclusion)
    return "success" if row.conclusion == expected else "failure"


def last_reports(engine: Engine) -> dict[str, datetime]:
    """Each backend that ever reported, with the time of its latest report."""
    with engine.connect() as connection:
        rows = connection.execute(select(BACKENDS.c.repo, BACKENDS.c.last_run_at)).all()
    return {row.repo: row.last_run_at for row in rows}


def probe_jobs(engine: Engine, repo: str, delivery_ids: Sequence[str]) -> list[ProbeJob]:
    """The canary's job rows for these probes, each job at its latest attempt.

    A probe job re-run by hand is judged by how the re-run ended, as its check would be.
    """
    if not delivery_ids:
        return []
    query = (
        select(
            JOBS.c.delivery_id,
            JOBS.c.job_name,
            JOBS.c.status,
            JOBS.c.conclusion,
            JOBS.c.expected_conclusion,
        )
        .where(JOBS.c.downstream_repo == repo, JOBS.c.delivery_id.in_(list(delivery_ids)))
        .order_by(JOBS.c.run_attempt)
    )
    with engine.connect() as connection:
        rows = connection.execute(query).all()
    latest = {
        (row.delivery_id, row.job_name): ProbeJob(
            row.delivery_id, row.job_name, row.status, row.conclusion, row.expected_conclusion
        )
        for row in rows
    }
    return list(latest.values())


NIGHTLY_ROWS_PER_RUN = 50
"""Job rows read per nightly run shown: a canary's nightly workflow is a handful of jobs."""


def nightly_runs(engine: Engine, repo: str, runs: int) -> list[NightlyRun]:
    """The canary's newest `runs` nightly self-reported runs, each job at its latest attempt."""
    query = (
        select(
            JOBS.c.delivery_id,
            JOBS.c.job_name,
            JOBS.c.status,
            JOBS.c.conclusion,
            JOBS.c.expected_conclusion,
            JOBS.c.activity_at,
        )
        .where(JOBS.c.downstream_repo == repo, JOBS.c.event_type == fixed("nightly"), ACTIVITY_ROWS)
        .order_by(JOBS.c.activity_at.desc(), JOBS.c.run_attempt.desc())
        .limit(runs * NIGHTLY_ROWS_PER_RUN)
    )
    with engine.connect() as connection:
        rows = connection.execute(query).all()
    jobs: dict[str, dict[str, ProbeJob]] = {}
    reported: dict[str, datetime] = {}
    for row in rows:  # newest first: the first row of a job is its latest attempt
        own = jobs.setdefault(row.delivery_id, {})
        reported.setdefault(row.delivery_id, row.activity_at)
        own.setdefault(
            row.job_name,
            ProbeJob(
                row.delivery_id, row.job_name, row.status, row.conclusion, row.expected_conclusion
            ),
        )
    newest = list(jobs)[:runs]
    return [NightlyRun(d, reported[d], tuple(jobs[d].values())) for d in newest]

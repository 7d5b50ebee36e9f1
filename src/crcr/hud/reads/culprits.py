"""What culprit finding reads from the results store: push results, and its own dispatches' jobs.

Index-backed (`ix_hud_jobs_repo_event_activity` for a backend's pushes,
`ix_hud_jobs_repo_sha`'s repo prefix for its dispatches), sized by the caller. Only
`push` rows say where the default branch broke: a backend's `crcr_bisect` and `crcr_aa`
rows are read by their delivery ids alone and never judged as the branch's state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, Select, func, select

from crcr.hud.models import ACTIVITY_ROWS, JOBS, fixed


@dataclass(frozen=True)
class JobResult:
    """One job row at its latest attempt: which upstream commit, how it stands."""

    delivery_id: str
    head_sha: str
    job: str
    status: str
    conclusion: str | None
    finished: datetime


def push_results(engine: Engine, repo: str, limit: int) -> list[JobResult]:
    """The backend's newest `limit` completed push jobs, newest first."""
    query = (
        _results()
        .where(
            JOBS.c.downstream_repo == repo,
            JOBS.c.event_type == fixed("push"),
            JOBS.c.status == fixed("completed"),
            ACTIVITY_ROWS,
        )
        .order_by(JOBS.c.activity_at.desc())
        .limit(limit)
    )
    with engine.connect() as connection:
        rows = connection.execute(query).all()
    return [_result(row) for row in rows]


def dispatch_jobs(engine: Engine, repo: str, delivery_ids: Sequence[str]) -> list[JobResult]:
    """The backend's job rows for these dispatches, each job at its latest attempt."""
    if not delivery_ids:
        return []
    query = (
        _results()
        .where(JOBS.c.downstream_repo == repo, JOBS.c.delivery_id.in_(list(delivery_ids)))
        .order_by(JOBS.c.run_attempt)
    )
    with engine.connect() as connection:
        rows = connection.execute(query).all()
    latest = {(row.delivery_id, row.workflow_name, row.job_name): _result(row) for row in rows}
    return list(latest.values())


def _results() -> Select[Any]:
    """The columns a `JobResult` is read from."""
    return select(
        JOBS.c.delivery_id,
        JOBS.c.head_sha,
        JOBS.c.workflow_name,
        JOBS.c.job_name,
        JOBS.c.status,
        JOBS.c.conclusion,
        func.coalesce(JOBS.c.completed_at, JOBS.c.activity_at).label("finished"),
    )


def _result(row: object) -> JobResult:
    return JobResult(
        delivery_id=str(row.delivery_id),  # type: ignore[attr-defined]
        head_sha=str(row.head_sha),  # type: ignore[attr-defined]
        job=f"{row.workflow_name}\x00{row.job_name}",  # type: ignore[attr-defined]
        status=str(row.status),  # type: ignore[attr-defined]
        conclusion=row.conclusion,  # type: ignore[attr-defined]
        finished=row.finished,  # type: ignore[attr-defined]
    )

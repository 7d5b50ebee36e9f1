"""The nightly/periodic view: per backend, the latest tested upstream SHA and pass rate."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, Engine, func, select

from crcr.hud.models import ACTIVITY_ROWS, BACKENDS, DAILY, JOBS, fixed
from crcr.hud.reads.window import ratio, window_days
from crcr.hud.shards import severity

NIGHTLY_EVENT_TYPES = ("nightly", "periodic")


@dataclass(frozen=True)
class PeriodicRow:
    """A backend's nightly/periodic self-reports: the latest tested upstream SHA."""

    repo: str
    level: str | None
    latest_sha: str | None
    latest_at: datetime | None
    latest_conclusion: str | None
    successes: int
    failures: int
    total: int
    pass_rate: float | None


def read_periodic(engine: Engine, window: int, now: datetime | None) -> tuple[PeriodicRow, ...]:
    """Backends with nightly or periodic self-reports in the window."""
    days = window_days(window, now)
    totals = (
        select(
            DAILY.c.downstream_repo,
            func.sum(DAILY.c.success),
            func.sum(DAILY.c.failure),
            func.sum(DAILY.c.completed),
        )
        .where(
            DAILY.c.day >= days[0],
            DAILY.c.day <= days[-1],
            DAILY.c.event_type.in_(NIGHTLY_EVENT_TYPES),
        )
        .group_by(DAILY.c.downstream_repo)
        .order_by(DAILY.c.downstream_repo)
    )
    rows = []
    with engine.connect() as connection:
        for repo, success, failure, completed in connection.execute(totals).all():
            level = connection.execute(
                select(BACKENDS.c.level).where(BACKENDS.c.repo == repo)
            ).scalar()
            sha, at, conclusion = _latest(connection, repo)
            rows.append(
                PeriodicRow(
                    repo=repo,
                    level=level,
                    latest_sha=sha,
                    latest_at=at,
                    latest_conclusion=conclusion,
                    successes=int(success),
                    failures=int(failure),
                    total=int(completed),
                    pass_rate=ratio(int(success), int(completed)),
                )
            )
    return tuple(rows)


def _latest(connection: Connection, repo: str) -> tuple[str | None, datetime | None, str | None]:
    """The newest tested SHA and the worst conclusion among its jobs."""
    newest = connection.execute(
        select(JOBS.c.head_sha, JOBS.c.activity_at)
        .where(
            JOBS.c.downstream_repo == repo,
            JOBS.c.event_type.in_([fixed(event) for event in NIGHTLY_EVENT_TYPES]),
            ACTIVITY_ROWS,
        )
        .order_by(JOBS.c.activity_at.desc())
        .limit(1)
    ).first()
    if newest is None:
        return None, None, None
    jobs = connection.execute(
        select(JOBS.c.status, JOBS.c.conclusion).where(
            JOBS.c.downstream_repo == repo,
            JOBS.c.head_sha == newest.head_sha,
            JOBS.c.event_type.in_([fixed(event) for event in NIGHTLY_EVENT_TYPES]),
        )
    ).all()
    worst = max(jobs, key=lambda job: severity(job.status, job.conclusion))
    return newest.head_sha, newest.activity_at, worst.conclusion

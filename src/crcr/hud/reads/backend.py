"""A backend's page: figures from the rollups and a commit-by-job matrix from the rows.

Commits are listed from `hud_commits` (index on repo, last activity), then only the jobs
of the page's commits are read.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime

from sqlalchemy import Connection, Engine, func, select

from crcr.hud.baseline.reader import verdicts_of_rows
from crcr.hud.models import BACKENDS, COMMITS, DAILY, JOBS
from crcr.hud.reads.window import day_start, mean_seconds, ratio, window_days
from crcr.hud.records import JobRow, job_row
from crcr.hud.shards import column_name, severity

_SUMMED = ("completed", "success", "failure", "timed_out")
_TIMES = ("queue_ms_sum", "queue_n", "execution_ms_sum", "execution_n")


@dataclass(frozen=True)
class JobAttempt:
    """An earlier execution of the same job (a re-run superseded it)."""

    run_attempt: int
    status: str
    conclusion: str | None
    run_url: str | None
    completed_at: datetime | None


@dataclass(frozen=True)
class JobCell:
    """One column of a PR row: the latest attempt of a job, or of its worst shard."""

    column: str
    workflow_name: str
    job_name: str
    status: str
    conclusion: str | None
    run_url: str | None
    artifact_url: str | None
    passed: int | None
    failed: int | None
    skipped: int | None
    total_tests: int | None
    queue_time: float | None
    duration: float | None
    run_attempt: int
    started_at: datetime | None
    completed_at: datetime | None
    shard_count: int = 1
    earlier_attempts: tuple[JobAttempt, ...] = ()
    baseline: str | None = None
    failed_tests: tuple[str, ...] = ()
    failed_tests_dropped: int = 0
    confirmed: bool | None = None
    superseded_by: str | None = None
    """A newer head of the PR superseded these jobs (SPEC §15): shown, never counted."""


@dataclass(frozen=True)
class PrRow:
    """One upstream commit a backend tested (a PR head, or a push with `pr_number` 0)."""

    pr_number: int
    head_sha: str
    event_type: str
    last_activity: datetime
    cells: dict[str, JobCell] = field(default_factory=dict)


@dataclass(frozen=True)
class BackendStats:
    """A backend's figures over the window (completed jobs; rates None without jobs)."""

    total: int
    successes: int
    failures: int
    timed_out: int
    pass_rate: float | None
    timeout_rate: float | None
    pr_count: int
    avg_queue_time: float | None
    avg_execution_time: float | None


@dataclass(frozen=True)
class Pagination:
    """Where a page sits in the list of rows."""

    page: int
    per_page: int
    total_rows: int
    pages: int


MAX_PAGE = 100_000
"""Pages past this are read as empty: their offset would overflow the database's 64-bit
integers (a 500), and no backend has that many commits in a 90-day window."""


@dataclass(frozen=True)
class BackendPage:
    """A backend's page: its figures and a matrix of recent commits by job columns."""

    repo: str
    level: str | None
    window_days: int
    stats: BackendStats
    columns: tuple[str, ...]
    rows: tuple[PrRow, ...]
    pagination: Pagination


def read_backend_page(
    engine: Engine,
    repo: str,
    window: int,
    page: int,
    per_page: int,
    event_type: str | None,
    now: datetime | None,
) -> BackendPage | None:
    """A backend's figures and one page of its recent commits; None if never seen."""
    days = window_days(window, now)
    with engine.connect() as connection:
        backend = connection.execute(
            select(BACKENDS.c.repo, BACKENDS.c.level).where(BACKENDS.c.repo == repo)
        ).first()
        if backend is None:
            return None
        stats = _stats(connection, repo, days[0], days[-1], event_type)
        commits = select(COMMITS.c.pr_number, COMMITS.c.head_sha, COMMITS.c.last_activity_at).where(
            COMMITS.c.downstream_repo == repo,
            COMMITS.c.last_activity_at >= day_start(days[0]),
        )
        if event_type is not None:
            commits = commits.where(COMMITS.c.event_type == event_type)
        total_rows = connection.execute(
            select(func.count()).select_from(commits.subquery())
        ).scalar_one()
        listed = (
            connection.execute(
                commits.order_by(COMMITS.c.last_activity_at.desc(), COMMITS.c.pr_number.desc())
                .limit(per_page)
                .offset((page - 1) * per_page)
            ).all()
            if page <= MAX_PAGE
            else []
        )
        shas = sorted({sha for _, sha, _ in listed})
        jobs = (
            connection.execute(
                select(JOBS).where(JOBS.c.downstream_repo == repo, JOBS.c.head_sha.in_(shas))
            )
            .mappings()
            .all()
            if shas
            else []
        )
        verdicts = verdicts_of_rows(connection, jobs)
    by_commit: dict[tuple[int, str], list[JobRow]] = defaultdict(list)
    for job in jobs:
        by_commit[(job["pr_number"], job["head_sha"])].append(
            job_row(job, verdicts.get(job["job_key"]))
        )
    rows = tuple(
        _pr_row(pr_number, sha, last, by_commit[(pr_number, sha)])
        for pr_number, sha, last in listed
    )
    columns = tuple(sorted({column for row in rows for column in row.cells}))
    return BackendPage(
        repo=backend.repo,
        level=backend.level,
        window_days=window,
        stats=stats,
        columns=columns,
        rows=rows,
        pagination=Pagination(
            page=page,
            per_page=per_page,
            total_rows=int(total_rows),
            pages=max(1, math.ceil(total_rows / per_page)),
        ),
    )


def _stats(
    connection: Connection, repo: str, first: date, last: date, event_type: str | None
) -> BackendStats:
    sums = select(*(func.coalesce(func.sum(DAILY.c[n]), 0) for n in _SUMMED + _TIMES)).where(
        DAILY.c.downstream_repo == repo, DAILY.c.day >= first, DAILY.c.day <= last
    )
    # PRs are counted from the commits table (one row per tested commit, indexed by
    # repo and activity) rather than from per-day PR counts (migration 0008 dropped
    # them), whose rows multiply by the days a PR is active: at 10 M job rows that scan
    # cost ~0.8 s, this one ~30 ms.
    prs = select(func.count(func.distinct(COMMITS.c.pr_number))).where(
        COMMITS.c.downstream_repo == repo,
        COMMITS.c.last_activity_at >= day_start(first),
        COMMITS.c.pr_number > 0,
    )
    if event_type is not None:
        sums = sums.where(DAILY.c.event_type == event_type)
        prs = prs.where(COMMITS.c.event_type == event_type)
    completed, success, failure, timed_out, q_sum, q_n, e_sum, e_n = (
        int(v) for v in connection.execute(sums).one()
    )
    return BackendStats(
        total=completed,
        successes=success,
        failures=failure,
        timed_out=timed_out,
        pass_rate=ratio(success, completed),
        timeout_rate=ratio(timed_out, completed),
        pr_count=int(connection.execute(prs).scalar_one()),
        avg_queue_time=mean_seconds(q_sum, q_n),
        avg_execution_time=mean_seconds(e_sum, e_n),
    )


def _pr_row(pr_number: int, sha: str, last: datetime, jobs: Sequence[JobRow]) -> PrRow:
    columns: dict[str, dict[tuple[str, str], list[JobRow]]] = defaultdict(lambda: defaultdict(list))
    for job in jobs:
        key = (job.workflow_name, job.job_name)
        columns[column_name(job.workflow_name, job.job_name)][key].append(job)
    cells = {name: _cell(name, list(shards.values())) for name, shards in columns.items()}
    event_type = jobs[0].event_type if jobs else ""
    return PrRow(
        pr_number=pr_number, head_sha=sha, event_type=event_type, last_activity=last, cells=cells
    )


def _cell(column: str, shards: list[list[JobRow]]) -> JobCell:
    """The worst shard's latest attempt, with test counts summed over all shards."""
    latest = [max(attempts, key=lambda j: (j.run_attempt, j.run_id)) for attempts in shards]
    worst_index = max(
        range(len(latest)), key=lambda i: severity(latest[i].status, latest[i].conclusion)
    )
    worst = latest[worst_index]
    earlier = sorted(
        (j for j in shards[worst_index] if j is not worst), key=lambda j: j.run_attempt
    )

    names = [test.name for job in latest for test in job.failed_tests or ()]
    verdict = worst.baseline
    if verdict is None and any(j.baseline == "flaky" for j in earlier):
        verdict = "flaky"  # the latest attempt passed where an earlier one failed

    def total(name: str) -> int | None:
        values = [getattr(j, name) for j in latest if getattr(j, name) is not None]
        return sum(values) if values else None

    return JobCell(
        column=column,
        workflow_name=worst.workflow_name,
        job_name=worst.job_name,
        status=worst.status,
        conclusion=worst.conclusion,
        run_url=worst.workflow_run_url,
        artifact_url=worst.artifact_url,
        passed=total("passed"),
        failed=total("failed"),
        skipped=total("skipped"),
        total_tests=total("total_tests"),
        queue_time=worst.queue_time,
        duration=worst.execution_time,
        run_attempt=worst.run_attempt,
        started_at=worst.started_at,
        completed_at=worst.completed_at,
        shard_count=len(shards),
        earlier_attempts=tuple(
            JobAttempt(
                run_attempt=j.run_attempt,
                status=j.status,
                conclusion=j.conclusion,
                run_url=j.workflow_run_url,
                completed_at=j.completed_at,
            )
            for j in earlier
        ),
        baseline=verdict,
        failed_tests=tuple(dict.fromkeys(names)),
        failed_tests_dropped=sum(j.failed_tests_dropped for j in latest),
        confirmed=worst.confirmed,
        superseded_by=next((j.superseded_by for j in latest if j.superseded_by), None),
    )

"""The HUD's read side: frozen result types and the query facade the pages and API use.

This module is the contract between the results store and its readers. The JSON API
(`crcr.hud.api`) and the HTML pages (`crcr.hud.web`, built by another developer on top of
this module) call `HudQueries` and render the dataclasses below; neither touches SQL.
Obtain an instance from the composed HUD: `crcr.hud.component.Hud.queries`.

Windows are whole UTC calendar days: `window_days=7` means today and the six days before
it, because the rollups that keep the summary views cheap are kept per day.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime

from anyio import to_thread
from sqlalchemy import Engine

from crcr.hud.job_facts import JobFacts

WINDOW_CHOICES = (1, 7, 14, 30)
MAX_WINDOW_DAYS = 90
NIGHTLY_EVENT_TYPES = ("nightly", "periodic")


@dataclass(frozen=True)
class TrendPoint:
    """One day of a backend's pass-rate trend; `pass_rate` is None on a day without jobs."""

    day: date
    completed: int
    successes: int
    pass_rate: float | None


@dataclass(frozen=True)
class SummaryStats:
    """The stat cards above the summary table (completed jobs in the window)."""

    runs: int
    failures: int
    backends: int
    timed_out: int


@dataclass(frozen=True)
class BackendSummaryRow:
    """One backend's line on the summary page; `active` is False when it has no data."""

    repo: str
    level: str | None
    active: bool
    successes: int
    failures: int
    timed_out: int
    total: int
    in_progress: int
    pass_rate: float | None
    avg_queue_time: float | None
    avg_execution_time: float | None
    last_run: datetime | None
    trend: tuple[TrendPoint, ...]


@dataclass(frozen=True)
class Summary:
    """Every known backend's health over the window, for one or all event types."""

    window_days: int
    event_type: str | None
    days: tuple[date, ...]
    stats: SummaryStats
    backends: tuple[BackendSummaryRow, ...]


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


@dataclass(frozen=True)
class JobRecord(JobFacts):
    """One stored job execution, as the HUD holds it; None is a null column."""


@dataclass(frozen=True)
class PrBackendJobs:
    """One backend's jobs for an upstream PR, newest first."""

    repo: str
    level: str | None
    jobs: tuple[JobRecord, ...]


@dataclass(frozen=True)
class PrView:
    """Every backend's jobs for one upstream PR."""

    pr_number: int
    head_shas: tuple[str, ...]
    backends: tuple[PrBackendJobs, ...]


@dataclass(frozen=True)
class LatencyPoint:
    """Per backend per day percentiles, in seconds (None when no job had the figure)."""

    repo: str
    day: date
    queue_samples: int
    queue_p50: float | None
    queue_p90: float | None
    queue_p99: float | None
    execution_samples: int
    execution_p50: float | None
    execution_p90: float | None
    execution_p99: float | None


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


class HudQueries:
    """Read the results store; every method runs its SQL in a worker thread.

    `now` exists for tests and benchmarks; it defaults to the current UTC time. The SQL
    modules are imported on use because they import the result types above.
    """

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    async def summary(
        self, window_days: int, event_type: str | None = None, *, now: datetime | None = None
    ) -> Summary:
        """Every backend's health over the window, read from the daily rollups."""
        from crcr.hud.reads import summary

        return await to_thread.run_sync(
            summary.read_summary, self._engine, window_days, event_type, now
        )

    async def backend(
        self,
        repo: str,
        window_days: int,
        page: int = 1,
        per_page: int = 25,
        *,
        event_type: str | None = None,
        now: datetime | None = None,
    ) -> BackendPage | None:
        """A backend's figures and its recent commits' job matrix; None if unknown."""
        from crcr.hud.reads import backend

        return await to_thread.run_sync(
            backend.read_backend_page,
            self._engine,
            repo,
            window_days,
            page,
            per_page,
            event_type,
            now,
        )

    async def pr(self, number: int) -> PrView:
        """Every backend's jobs for an upstream PR (empty when none reported)."""
        from crcr.hud.reads import pr

        return await to_thread.run_sync(pr.read_pr, self._engine, number)

    async def latency_percentiles(
        self, window_days: int, *, now: datetime | None = None
    ) -> tuple[LatencyPoint, ...]:
        """Per backend per day p50/p90/p99 of queue and execution time."""
        from crcr.hud.reads import latency

        return await to_thread.run_sync(latency.read_latency, self._engine, window_days, now)

    async def periodic(
        self, window_days: int, *, now: datetime | None = None
    ) -> tuple[PeriodicRow, ...]:
        """Nightly/periodic view: latest tested upstream SHA and pass rate per backend."""
        from crcr.hud.reads import periodic

        return await to_thread.run_sync(periodic.read_periodic, self._engine, window_days, now)

"""The summary view, read from the daily rollups: O(backends x days) rows at any volume."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime

from sqlalchemy import Engine, func, select

from crcr.hud.models import BACKENDS, DAILY
from crcr.hud.reads.window import mean_seconds, ratio, window_days

_SUMMED = (
    "completed",
    "in_progress",
    "success",
    "failure",
    "timed_out",
    "queue_ms_sum",
    "queue_n",
    "execution_ms_sum",
    "execution_n",
)


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


def read_summary(
    engine: Engine, window: int, event_type: str | None, now: datetime | None
) -> Summary:
    """Every known backend's health over the window; backends without data are inactive."""
    days = window_days(window, now)
    query = (
        select(
            DAILY.c.downstream_repo,
            DAILY.c.day,
            *(func.sum(DAILY.c[name]).label(name) for name in _SUMMED),
        )
        .where(DAILY.c.day >= days[0], DAILY.c.day <= days[-1])
        .group_by(DAILY.c.downstream_repo, DAILY.c.day)
    )
    if event_type is not None:
        query = query.where(DAILY.c.event_type == event_type)
    with engine.connect() as connection:
        backends = connection.execute(
            select(BACKENDS.c.repo, BACKENDS.c.level, BACKENDS.c.last_run_at).order_by(
                BACKENDS.c.repo
            )
        ).all()
        per_day: dict[str, dict[date, dict[str, int]]] = defaultdict(dict)
        for row in connection.execute(query).mappings():
            per_day[row["downstream_repo"]][row["day"]] = {n: int(row[n] or 0) for n in _SUMMED}

    rows = tuple(
        _backend_row(repo, level, last_run, per_day.get(repo, {}), days)
        for repo, level, last_run in backends
    )
    stats = SummaryStats(
        runs=sum(r.total for r in rows),
        failures=sum(r.failures for r in rows),
        backends=sum(1 for r in rows if r.active),
        timed_out=sum(r.timed_out for r in rows),
    )
    return Summary(window_days=window, event_type=event_type, days=days, stats=stats, backends=rows)


def _backend_row(
    repo: str,
    level: str | None,
    last_run: datetime | None,
    days_data: dict[date, dict[str, int]],
    days: tuple[date, ...],
) -> BackendSummaryRow:
    totals = {name: sum(d[name] for d in days_data.values()) for name in _SUMMED}
    trend = tuple(
        TrendPoint(
            day=day,
            completed=days_data.get(day, {}).get("completed", 0),
            successes=days_data.get(day, {}).get("success", 0),
            pass_rate=ratio(
                days_data.get(day, {}).get("success", 0),
                days_data.get(day, {}).get("completed", 0),
            ),
        )
        for day in days
    )
    return BackendSummaryRow(
        repo=repo,
        level=level,
        active=bool(days_data),
        successes=totals["success"],
        failures=totals["failure"],
        timed_out=totals["timed_out"],
        total=totals["completed"],
        in_progress=totals["in_progress"],
        pass_rate=ratio(totals["success"], totals["completed"]),
        avg_queue_time=mean_seconds(totals["queue_ms_sum"], totals["queue_n"]),
        avg_execution_time=mean_seconds(totals["execution_ms_sum"], totals["execution_n"]),
        last_run=last_run,
        trend=trend,
    )

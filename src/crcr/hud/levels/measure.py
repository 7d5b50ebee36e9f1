"""Measuring each backend over its window from the level rollups (the read side).

Per backend: the per-day level sums of its window (a handful of rows), the median of its
runs' end-to-end times read from the (backend, day, time) index (a count, then the one
or two middle values), and its days at L2 from the level history. Nothing reads
`hud_jobs`, so the cost does not grow with the number of job rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from fractions import Fraction

from sqlalchemy import Connection, bindparam, func, select

from crcr.hud.levels.counted import LEVEL_COUNTERS
from crcr.hud.levels.judge import Measurements
from crcr.hud.models import LEVEL_DAILY, LEVEL_HISTORY, LEVEL_RUNS

_RUNS = LEVEL_RUNS.c
_IN_WINDOW = (
    _RUNS.downstream_repo == bindparam("repo"),
    _RUNS.day >= bindparam("first_day"),
    _RUNS.day <= bindparam("last_day"),
    _RUNS.e2e_ms.is_not(None),
)
_COUNT_RUNS = select(func.count()).select_from(LEVEL_RUNS).where(*_IN_WINDOW)
_MIDDLE_RUNS = (
    select(_RUNS.e2e_ms)
    .where(*_IN_WINDOW)
    .order_by(_RUNS.e2e_ms)
    .limit(bindparam("take"))
    .offset(bindparam("skip"))
)


@dataclass(frozen=True)
class LevelSpan:
    """A level a backend was reported at, from its first to its last report."""

    level: str
    first_seen_at: datetime
    last_seen_at: datetime


def level_history(connection: Connection) -> dict[str, tuple[LevelSpan, ...]]:
    """Every backend's level history (keyed by lower-case repo), oldest level first."""
    rows = connection.execute(
        select(LEVEL_HISTORY).order_by(LEVEL_HISTORY.c.repo, LEVEL_HISTORY.c.first_seen_at)
    ).mappings()
    history: dict[str, list[LevelSpan]] = {}
    for row in rows:
        span = LevelSpan(row["level"], row["first_seen_at"], row["last_seen_at"])
        history.setdefault(row["repo"].lower(), []).append(span)
    return {repo: tuple(spans) for repo, spans in history.items()}


def days_at(level: str, spans: tuple[LevelSpan, ...], now: datetime) -> int | None:
    """Whole days since the backend's first result at `level` (None if it has none)."""
    firsts = [span.first_seen_at for span in spans if span.level == level]
    if not firsts:
        return None
    return max(0, (now - min(firsts)) // timedelta(days=1))


def _median_ms(connection: Connection, repo: str, first: date, last: date) -> Fraction | None:
    """The median end-to-end time of a backend's runs in [first, last] (mean of two middles)."""
    window = {"repo": repo, "first_day": first, "last_day": last}
    runs = int(connection.execute(_COUNT_RUNS, window).scalar_one())
    if runs == 0:
        return None
    take = 1 if runs % 2 else 2
    middle = connection.execute(_MIDDLE_RUNS, {**window, "take": take, "skip": (runs - 1) // 2})
    values = [int(value) for value in middle.scalars()]
    return Fraction(sum(values), len(values))


def measure(
    connection: Connection,
    windows: Mapping[str, int],
    history: Mapping[str, tuple[LevelSpan, ...]],
    now: datetime,
) -> dict[str, Measurements]:
    """Each backend's measurements over its window of whole UTC days ending today.

    `windows` maps the repos as the results store spells them to their window in days.
    """
    today = now.date()
    if not windows:
        return {}
    oldest = today - timedelta(days=max(windows.values()) - 1)
    daily = connection.execute(
        select(LEVEL_DAILY).where(LEVEL_DAILY.c.day >= oldest, LEVEL_DAILY.c.day <= today)
    ).mappings()
    sums: dict[str, dict[str, int]] = {repo: dict.fromkeys(LEVEL_COUNTERS, 0) for repo in windows}
    for row in daily:
        repo = row["downstream_repo"]
        if repo in windows and row["day"] > today - timedelta(days=windows[repo]):
            for name in LEVEL_COUNTERS:
                sums[repo][name] += int(row[name])
    result = {}
    for repo, days in windows.items():
        first = today - timedelta(days=days - 1)
        result[repo] = Measurements(
            **sums[repo],
            e2e_p50_ms=_median_ms(connection, repo, first, today) if sums[repo]["jobs"] else None,
            days_at_l2=days_at("L2", history.get(repo.lower(), ()), now),
        )
    return result

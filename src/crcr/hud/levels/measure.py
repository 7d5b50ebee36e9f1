"""Measuring each backend over its window from the level rollups (the read side).

Per backend: the per-day level sums of its window (a handful of rows), the exact median
of its runs' end-to-end times (a histogram's counts locate it, then the runs of one
bucket are read in order), and its days at L2 from the level history. Nothing reads
`hud_jobs`, so the cost does not grow with the number of job rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from fractions import Fraction

from sqlalchemy import Connection, bindparam, case, func, select

from crcr.hud.levels.judge import Measurements
from crcr.hud.models import LEVEL_DAILY, LEVEL_E2E_BUCKETS, LEVEL_HISTORY, LEVEL_RUNS
from crcr.hud.write.level_counted import LEVEL_COUNTERS

_RUNS = LEVEL_RUNS.c
_BUCKETS = LEVEL_E2E_BUCKETS.c
_NTH_IN_BUCKET = (
    select(_RUNS.e2e_ms)
    .where(
        _RUNS.downstream_repo == bindparam("repo"),
        _RUNS.e2e_bucket == bindparam("bucket"),
        _RUNS.day >= bindparam("first_day"),
        _RUNS.day <= bindparam("last_day"),
    )
    .order_by(_RUNS.e2e_ms)
    .limit(1)
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


def _bucket_counts(
    connection: Connection, windows: Mapping[str, int], today: date
) -> dict[str, list[tuple[int, int]]]:
    """Each backend's end-to-end histogram over its own window, in one query.

    One sum per distinct window length (the demotion and the promotion window), so a
    backend's counts are read in a single pass whatever its level.
    """
    sizes = sorted(set(windows.values()))
    sums = [
        func.sum(
            case((_BUCKETS.day >= today - timedelta(days=size - 1), _BUCKETS.count), else_=0)
        ).label(f"w{size}")
        for size in sizes
    ]
    query = (
        select(_BUCKETS.downstream_repo, _BUCKETS.bucket, *sums)
        .where(_BUCKETS.day >= today - timedelta(days=sizes[-1] - 1), _BUCKETS.day <= today)
        .group_by(_BUCKETS.downstream_repo, _BUCKETS.bucket)
        .order_by(_BUCKETS.downstream_repo, _BUCKETS.bucket)
    )
    counts: dict[str, list[tuple[int, int]]] = {}
    for row in connection.execute(query).mappings():
        repo = row["downstream_repo"]
        if repo in windows and (n := int(row[f"w{windows[repo]}"])):
            counts.setdefault(repo, []).append((int(row["bucket"]), n))
    return counts


def _median_ms(
    connection: Connection, repo: str, first: date, last: date, counts: list[tuple[int, int]]
) -> Fraction | None:
    """The exact median end-to-end time of a backend's runs in [first, last].

    `counts` (the window's histogram, buckets ordered like times) says which bucket
    holds each middle rank; only that bucket's runs are read, in order. An even count
    takes the mean of the two middle values.
    """
    runs = sum(n for _, n in counts)
    if runs == 0:
        return None
    window = {"repo": repo, "first_day": first, "last_day": last}
    values = []
    for rank in sorted({(runs + 1) // 2, runs // 2 + 1}):
        below = 0
        for bucket, n in counts:
            if below + n >= rank:
                skip = {"bucket": bucket, "skip": rank - below - 1}
                values.append(
                    int(connection.execute(_NTH_IN_BUCKET, {**window, **skip}).scalar_one())
                )
                break
            below += n
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
    histograms = _bucket_counts(connection, windows, today)
    result = {}
    for repo, days in windows.items():
        first = today - timedelta(days=days - 1)
        result[repo] = Measurements(
            **sums[repo],
            e2e_p50_ms=_median_ms(connection, repo, first, today, histograms.get(repo, [])),
            days_at_l2=days_at("L2", history.get(repo.lower(), ()), now),
        )
    return result

"""What one job row contributes to the rollups, and the net change when rows are rewritten.

Pure: the write path sums each row it replaces (-1) and writes (+1) in `RollupSums` and
applies the net change in the same transaction as the rows, so rollups always equal an
aggregate over the raw rows.

Latency percentiles come from per-day log-scale histograms (8 buckets per doubling, so a
reported percentile is within about 4.5 % of the exact value) rather than from raw rows:
the metrics page then reads O(backends x days x buckets) rows however many jobs there are.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, TypeVar

QUEUE_METRIC = 0
EXECUTION_METRIC = 1
BUCKETS_PER_DOUBLING = 8
CONCLUSION_COUNTERS = ("success", "failure", "cancelled", "timed_out", "skipped")

DailyKey = tuple[str, date, str]
BucketKey = tuple[str, date, int, int]
K = TypeVar("K")


@dataclass(frozen=True)
class RollupChange:
    """Net deltas to apply; zero entries are left out so a no-op writes nothing."""

    daily: dict[DailyKey, dict[str, int]]
    buckets: dict[BucketKey, int]

    @property
    def empty(self) -> bool:
        """Whether applying the change would write nothing."""
        return not (self.daily or self.buckets)


def to_millis(seconds: float) -> int:
    """Seconds as whole milliseconds, the unit rollup sums are kept in."""
    return round(seconds * 1000)


def latency_bucket(seconds: float) -> int:
    """The histogram bucket of a duration: 0 below one second, then 8 per doubling."""
    if seconds < 1:
        return 0
    return 1 + math.floor(BUCKETS_PER_DOUBLING * math.log2(seconds))


def bucket_value(bucket: int) -> float:
    """The value a bucket stands for: the geometric middle of its bounds."""
    if bucket <= 0:
        return 0.5
    return float(2 ** ((bucket - 0.5) / BUCKETS_PER_DOUBLING))


def _add(counts: dict[K, int], key: K, delta: int) -> None:
    counts[key] = counts.get(key, 0) + delta


def _add_daily(
    counters: dict[str, int],
    status: str,
    conclusion: str | None,
    times: tuple[float | None, float | None, float | None],
    sign: int,
) -> None:
    """Add (sign 1) or take away (sign -1) what a row counts in its daily rollup.

    Plain dicts rather than Counters: this runs twice per HUD write, and Counter's
    Python-level `update` and `__init__` were a fifth of the write path's CPU.
    """
    _add(counters, "jobs", sign)
    if status == "completed":
        _add(counters, "completed", sign)
        name = conclusion if conclusion in CONCLUSION_COUNTERS else "other"
        _add(counters, name or "other", sign)
    else:
        _add(counters, "in_progress", sign)
    for (sum_name, n_name), value in zip(_TIME_COUNTERS, times, strict=True):
        if value is not None:
            _add(counters, sum_name, sign * to_millis(value))
            _add(counters, n_name, sign)


_TIME_COUNTERS = (
    ("queue_ms_sum", "queue_n"),
    ("execution_ms_sum", "execution_n"),
    ("duration_ms_sum", "duration_n"),
)


class RollupSums:
    """The net rollup change of many row writes, summed as they are added.

    A batch of writes adds each old row (-1) and new row (+1) here and applies one
    change: one `RollupChange` per write, then their sum, was a tenth of the write
    path's Python work (docs/benchmarks.md, branch hudwrite).
    """

    def __init__(self) -> None:
        self.daily: dict[DailyKey, dict[str, int]] = {}
        self.buckets: dict[BucketKey, int] = {}

    def add_row(self, row: Mapping[str, Any], sign: int) -> None:
        """Count (sign 1) or uncount (sign -1) a job row, given as a mapping of its columns;
        a row a newer head of its PR superseded (SPEC §15) counts in no rollup."""
        if row.get("superseded_by") is not None:
            return
        self._count(
            row["downstream_repo"],
            row["day"],
            row["event_type"],
            row["status"],
            row["conclusion"],
            (row["queue_time"], row["execution_time"], row["duration"]),
            sign,
        )

    def _count(
        self,
        repo: str,
        day: date,
        event_type: str,
        status: str,
        conclusion: str | None,
        times: tuple[float | None, float | None, float | None],
        sign: int,
    ) -> None:
        daily = self.daily.get((repo, day, event_type))
        if daily is None:
            daily = self.daily[(repo, day, event_type)] = {}
        _add_daily(daily, status, conclusion, times, sign)
        for metric, value in ((QUEUE_METRIC, times[0]), (EXECUTION_METRIC, times[1])):
            if value is not None:
                _add(self.buckets, (repo, day, metric, latency_bucket(value)), sign)

    def change(self) -> RollupChange:
        """The net change so far, entries that net to zero left out."""
        return _without_zeros(self.daily, self.buckets)


def _nonzero(counts: dict[K, int]) -> dict[K, int]:
    return {k: v for k, v in counts.items() if v}


def _without_zeros(
    daily: dict[DailyKey, dict[str, int]], buckets: dict[BucketKey, int]
) -> RollupChange:
    """The change, with the entries that net to zero left out (a no-op writes nothing)."""
    return RollupChange(
        daily={k: nonzero for k, v in daily.items() if (nonzero := _nonzero(v))},
        buckets=_nonzero(buckets),
    )


def percentile_from_buckets(counts: Sequence[tuple[int, int]], fraction: float) -> float | None:
    """The value at `fraction` (0..1) of a histogram given as (bucket, count) pairs."""
    ordered = sorted((b, c) for b, c in counts if c > 0)
    total = sum(c for _, c in ordered)
    if total == 0:
        return None
    rank = max(1, math.ceil(fraction * total))
    seen = 0
    for bucket, count in ordered:
        seen += count
        if seen >= rank:
            return bucket_value(bucket)
    return bucket_value(ordered[-1][0])

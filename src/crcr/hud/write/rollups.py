"""What one job row contributes to the rollups, and the net change when a row is rewritten.

Pure functions: the write path computes `rollup_change(old, new)` and applies it in the
same transaction as the row, so rollups always equal an aggregate over the raw rows.

Latency percentiles come from per-day log-scale histograms (8 buckets per doubling, so a
reported percentile is within about 4.5 % of the exact value) rather than from raw rows:
the metrics page then reads O(backends x days x buckets) rows however many jobs there are.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import TypeVar

QUEUE_METRIC = 0
EXECUTION_METRIC = 1
BUCKETS_PER_DOUBLING = 8
CONCLUSION_COUNTERS = ("success", "failure", "cancelled", "timed_out", "skipped")

DailyKey = tuple[str, date, str]
PrKey = tuple[str, date, str, int]
BucketKey = tuple[str, date, int, int]
K = TypeVar("K")


@dataclass(frozen=True)
class RollupFacts:
    """The parts of a stored job row that the rollups depend on."""

    downstream_repo: str
    day: date
    event_type: str
    pr_number: int
    status: str
    conclusion: str | None
    queue_time: float | None
    execution_time: float | None
    duration: float | None
    superseded: bool = False
    """A newer head of its PR superseded the job (SPEC §15): it counts in no rollup."""


@dataclass(frozen=True)
class RollupChange:
    """Net deltas to apply; zero entries are left out so a no-op writes nothing."""

    daily: dict[DailyKey, dict[str, int]]
    prs: dict[PrKey, int]
    buckets: dict[BucketKey, int]

    @property
    def empty(self) -> bool:
        """Whether applying the change would write nothing."""
        return not (self.daily or self.prs or self.buckets)


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


def _add_daily(counters: dict[str, int], facts: RollupFacts, sign: int) -> None:
    """Add (sign 1) or take away (sign -1) what a row counts in its daily rollup.

    Plain dicts rather than Counters: this runs twice per HUD write, and Counter's
    Python-level `update` and `__init__` were a fifth of the write path's CPU.
    """
    _add(counters, "jobs", sign)
    if facts.status == "completed":
        _add(counters, "completed", sign)
        name = facts.conclusion if facts.conclusion in CONCLUSION_COUNTERS else "other"
        _add(counters, name or "other", sign)
    else:
        _add(counters, "in_progress", sign)
    for sum_name, n_name, value in (
        ("queue_ms_sum", "queue_n", facts.queue_time),
        ("execution_ms_sum", "execution_n", facts.execution_time),
        ("duration_ms_sum", "duration_n", facts.duration),
    ):
        if value is not None:
            _add(counters, sum_name, sign * to_millis(value))
            _add(counters, n_name, sign)


def rollup_change(old: RollupFacts | None, new: RollupFacts) -> RollupChange:
    """The net rollup change of replacing `old` (None for an insert) with `new`."""
    daily: dict[DailyKey, dict[str, int]] = {}
    prs: dict[PrKey, int] = {}
    buckets: dict[BucketKey, int] = {}
    for facts, sign in ((old, -1), (new, 1)):
        if facts is None or facts.superseded:
            continue
        key = (facts.downstream_repo, facts.day, facts.event_type)
        _add_daily(daily.setdefault(key, {}), facts, sign)
        if facts.pr_number > 0:
            _add(prs, (facts.downstream_repo, facts.day, facts.event_type, facts.pr_number), sign)
        for metric, value in (
            (QUEUE_METRIC, facts.queue_time),
            (EXECUTION_METRIC, facts.execution_time),
        ):
            if value is not None:
                _add(
                    buckets, (facts.downstream_repo, facts.day, metric, latency_bucket(value)), sign
                )
    return _without_zeros(daily, prs, buckets)


def _nonzero(counts: dict[K, int]) -> dict[K, int]:
    return {k: v for k, v in counts.items() if v}


def _without_zeros(
    daily: dict[DailyKey, dict[str, int]], prs: dict[PrKey, int], buckets: dict[BucketKey, int]
) -> RollupChange:
    """The change, with the entries that net to zero left out (a no-op writes nothing)."""
    return RollupChange(
        daily={k: nonzero for k, v in daily.items() if (nonzero := _nonzero(v))},
        prs=_nonzero(prs),
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


def summed(changes: Iterable[RollupChange]) -> RollupChange:
    """The net of several changes; zero entries left out, as `rollup_change` does."""
    daily: dict[DailyKey, dict[str, int]] = {}
    prs: dict[PrKey, int] = {}
    buckets: dict[BucketKey, int] = {}
    for change in changes:
        for key, counters in change.daily.items():
            total = daily.setdefault(key, {})
            for name, delta in counters.items():
                _add(total, name, delta)
        for pr_key, delta in change.prs.items():
            _add(prs, pr_key, delta)
        for bucket_key, delta in change.buckets.items():
            _add(buckets, bucket_key, delta)
    return _without_zeros(daily, prs, buckets)

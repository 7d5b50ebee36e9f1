"""Latency percentiles per backend per day, from the per-day histograms.

Approximate by design (see `crcr.hud.write.rollups`): within about 4.5 % of the exact value,
and the read is O(backends x days x buckets) whatever the number of jobs.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime

from sqlalchemy import Engine, select

from crcr.hud.models import BUCKETS
from crcr.hud.reads.window import window_days
from crcr.hud.write.rollups import EXECUTION_METRIC, QUEUE_METRIC, percentile_from_buckets

Histogram = list[tuple[int, int]]


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


def read_latency(engine: Engine, window: int, now: datetime | None) -> tuple[LatencyPoint, ...]:
    """Per backend per day p50/p90/p99 of queue and execution time."""
    days = window_days(window, now)
    query = select(
        BUCKETS.c.downstream_repo,
        BUCKETS.c.day,
        BUCKETS.c.metric,
        BUCKETS.c.bucket,
        BUCKETS.c["count"],
    ).where(BUCKETS.c.day >= days[0], BUCKETS.c.day <= days[-1])
    histograms: dict[tuple[str, date], dict[int, Histogram]] = defaultdict(
        lambda: defaultdict(list)
    )
    with engine.connect() as connection:
        for repo, day, metric, bucket, count in connection.execute(query):
            histograms[(repo, day)][metric].append((bucket, count))
    points = []
    for (repo, day), metrics in sorted(histograms.items()):
        queue, execution = metrics.get(QUEUE_METRIC, []), metrics.get(EXECUTION_METRIC, [])
        points.append(
            LatencyPoint(
                repo=repo,
                day=day,
                queue_samples=sum(c for _, c in queue),
                queue_p50=percentile_from_buckets(queue, 0.50),
                queue_p90=percentile_from_buckets(queue, 0.90),
                queue_p99=percentile_from_buckets(queue, 0.99),
                execution_samples=sum(c for _, c in execution),
                execution_p50=percentile_from_buckets(execution, 0.50),
                execution_p90=percentile_from_buckets(execution, 0.90),
                execution_p99=percentile_from_buckets(execution, 0.99),
            )
        )
    return tuple(points)

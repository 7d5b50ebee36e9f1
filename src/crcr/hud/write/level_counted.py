"""Which attempt of a job the level criteria count, and what it adds to the level rollups.

Pure. SPEC §10 judges completed pull_request jobs, the latest `run_attempt` per
(backend, run, job name): the write path keeps one `CountedJob` per such key and, when
a later attempt completes, swaps the earlier one's contribution for its own.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from crcr.hud.write.rollups import to_millis

# What an overrun is (the reference's definition, not a threshold): over 3 hours' execution.
OVERRUN_MS = 3 * 3600 * 1000
# Twice the latency histograms' resolution: the median's bucket holds fewer runs to sort.
E2E_BUCKETS_PER_DOUBLING = 16
LEVEL_COUNTERS = ("jobs", "success", "timed_out", "overrun", "queue_ms_sum", "queue_n")

LevelKey = tuple[str, str, str]
DayKey = tuple[str, date]


@dataclass(frozen=True)
class CountedJob:
    """The attempt of one (backend, run, job name) that the criteria count."""

    downstream_repo: str
    run_id: str
    job_name: str
    run_attempt: int
    job_key: str
    day: date
    conclusion: str | None
    queue_ms: int | None
    execution_ms: int | None
    started_at: datetime | None
    completed_at: datetime | None

    @property
    def key(self) -> LevelKey:
        """The (backend, run, job name) the latest attempt is chosen within."""
        return (self.downstream_repo, self.run_id, self.job_name)

    def as_row(self) -> dict[str, Any]:
        """The `hud_level_jobs` row (not `asdict`, whose deep copies cost the write path)."""
        return dict(vars(self))


def counts(row: Mapping[str, Any]) -> bool:
    """Whether a job row is one the criteria look at: a completed pull_request job that
    no newer head of its PR superseded (SPEC §15)."""
    return bool(
        row["status"] == "completed"
        and row["event_type"] == "pull_request"
        and row.get("superseded_by") is None
    )


def counted_job(row: Mapping[str, Any]) -> CountedJob:
    """The level entry of a job row that `counts`."""
    return CountedJob(
        downstream_repo=row["downstream_repo"],
        run_id=row["run_id"],
        job_name=row["job_name"],
        run_attempt=row["run_attempt"],
        job_key=row["job_key"],
        day=row["day"],
        conclusion=row["conclusion"],
        queue_ms=None if row["queue_time"] is None else to_millis(row["queue_time"]),
        execution_ms=None if row["execution_time"] is None else to_millis(row["execution_time"]),
        started_at=row["started_at"],
        completed_at=row["completed_at"],
    )


def supersedes(candidate: CountedJob, current: CountedJob | None) -> bool:
    """Whether `candidate` is counted instead of `current`.

    The same row always replaces itself (a completion replacing a timeout); otherwise
    the higher attempt wins, and the job key breaks a tie so that the choice does not
    depend on arrival order.
    """
    if current is None or candidate.job_key == current.job_key:
        return True
    return (candidate.run_attempt, candidate.job_key) > (current.run_attempt, current.job_key)


def recounted(
    stored: Mapping[LevelKey, CountedJob], rows: Sequence[Mapping[str, Any]]
) -> tuple[dict[LevelKey, CountedJob], set[LevelKey]]:
    """The counted job of each key after `rows` were written, in order, over `stored`.

    Also returns the keys whose counted row stopped counting (its event type changed):
    rare enough for the caller to pick again from the job rows.
    """
    current = dict(stored)
    lost: set[LevelKey] = set()
    for row in rows:
        key = (row["downstream_repo"], row["run_id"], row["job_name"])
        held = current.get(key)
        if counts(row):
            candidate = counted_job(row)
            if supersedes(candidate, held):
                current[key] = candidate
                lost.discard(key)
        elif held is not None and held.job_key == row["job_key"]:
            del current[key]
            lost.add(key)
    return current, lost


def contribution(job: CountedJob) -> dict[str, int]:
    """What one counted job adds to its (backend, day) level rollup."""
    timed_out = job.conclusion == "timed_out"
    added = {
        "jobs": 1,
        "success": int(job.conclusion == "success"),
        "timed_out": int(timed_out),
        "overrun": int(not timed_out and (job.execution_ms or 0) > OVERRUN_MS),
        "queue_ms_sum": job.queue_ms or 0,
        "queue_n": int(job.queue_ms is not None),
    }
    return {name: value for name, value in added.items() if value}


def daily_change(
    old: CountedJob | None, new: CountedJob | None, into: dict[DayKey, dict[str, int]]
) -> None:
    """Add to `into` the net change of counting `new` instead of `old` (either may be None)."""
    for job, sign in ((old, -1), (new, 1)):
        if job is None:
            continue
        counters = into.setdefault((job.downstream_repo, job.day), {})
        for name, value in contribution(job).items():
            counters[name] = counters.get(name, 0) + sign * value


def end_to_end_ms(
    first_start: datetime | None, last_completion: datetime | None, queue_ms: int | None
) -> int | None:
    """A run's end-to-end time: its queue time plus first job start to last completion.

    The queue time is the shortest of its jobs' (the first job to start waited the
    least since the dispatch they share); None when a start or completion is unknown.
    """
    if first_start is None or last_completion is None:
        return None
    span = max(0, round((last_completion - first_start).total_seconds() * 1000))
    return span + (queue_ms or 0)


def run_row(facts: Mapping[str, Any]) -> dict[str, Any]:
    """A `hud_level_runs` row from its run's facts (first start, last completion, ...)."""
    e2e = end_to_end_ms(facts["first_start"], facts["last_completion"], facts["queue_ms"])
    return {
        "downstream_repo": facts["downstream_repo"],
        "run_id": facts["run_id"],
        "day": facts["day"],
        "e2e_ms": e2e,
        "e2e_bucket": None if e2e is None else e2e_bucket(e2e),
    }


def e2e_bucket(e2e_ms: int) -> int:
    """The histogram bucket of an end-to-end time: 0 below a second, then 16 per doubling.

    Buckets only have to be ordered like the times they hold: the median is then read
    exactly from the runs of its bucket.
    """
    if e2e_ms < 1000:
        return 0
    return 1 + math.floor(E2E_BUCKETS_PER_DOUBLING * math.log2(e2e_ms / 1000))

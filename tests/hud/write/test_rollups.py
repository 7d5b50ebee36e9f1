"""Rollups equal aggregates recomputed from the raw rows, whatever sequence of writes made them."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, Integer, case, cast, func, select
from tests.hud.hud_bodies import our_body
from tests.hud.store_tools import clear

from crcr.hud.models import Commit, DailyRollup, JobExecution, LatencyBucket
from crcr.hud.write.ingest import parse_result_body
from crcr.hud.write.rollups import (
    EXECUTION_METRIC,
    QUEUE_METRIC,
    bucket_value,
    latency_bucket,
    percentile_from_buckets,
)
from crcr.hud.write.writer import write_report

BASE = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
CONCLUSIONS = ("success", "failure", "cancelled", "timed_out", "skipped", "neutral", None)

millis = st.one_of(st.none(), st.integers(0, 50_000_000).map(lambda ms: ms / 1000))
write = st.fixed_dictionaries(
    {
        "repo": st.sampled_from(["acme/a", "acme/b"]),
        "event_type": st.sampled_from(["pull_request", "push", "nightly"]),
        "pr_number": st.integers(1, 3),
        "job": st.sampled_from(["build", "test-1", "test-2"]),
        "run_attempt": st.sampled_from(["1", "2"]),
        "status": st.sampled_from(["in_progress", "completed"]),
        "conclusion": st.sampled_from(CONCLUSIONS),
        "queue_time": millis,
        "execution_time": millis,
        "started_at": st.sampled_from([None, "2026-11-01T10:00:00Z"]),
        "completed_at": st.sampled_from([None, "2026-11-01T10:30:00Z"]),
        "day": st.integers(0, 3),
        # SPEC §15: a superseded job's row counts in no rollup (and stays superseded).
        "superseded_by": st.sampled_from([None, None, "b" * 40]),
    }
)


def apply(engine: Engine, step: dict[str, Any], day: int) -> None:
    body = our_body(
        repo=step["repo"],
        event_type=step["event_type"],
        pr_number=0 if step["event_type"] != "pull_request" else step["pr_number"],
        delivery_id=f"d{step['pr_number']}",
        job=step["job"],
        run_attempt=step["run_attempt"],
        check_run_id=f"{step['job']}-{step['run_attempt']}",
        status=step["status"],
        conclusion=step["conclusion"] if step["status"] == "completed" else None,
        queue_time=step["queue_time"],
        execution_time=step["execution_time"],
        started_at=step["started_at"],
        completed_at=step["completed_at"],
    )
    if step["superseded_by"] is not None:
        body["trusted"]["superseded_by"] = step["superseded_by"]
    write_report(engine, parse_result_body(body), BASE + timedelta(days=day))


def _daily_from_rows(engine: Engine) -> dict[tuple[Any, ...], dict[str, int]]:
    def count_if(condition: Any) -> Any:
        return func.sum(case((condition, 1), else_=0))

    def ms_sum(column: Any) -> Any:
        return func.coalesce(func.sum(cast(func.round(column * 1000), Integer)), 0)

    done = JobExecution.status == "completed"
    query = select(
        JobExecution.downstream_repo,
        JobExecution.day,
        JobExecution.event_type,
        func.count().label("jobs"),
        count_if(done).label("completed"),
        count_if(JobExecution.status != "completed").label("in_progress"),
        *(
            count_if(done & (JobExecution.conclusion == c)).label(c)
            for c in CONCLUSIONS
            if c and c != "neutral"
        ),
        count_if(
            done & (JobExecution.conclusion.is_(None) | (JobExecution.conclusion == "neutral"))
        ).label("other"),
        ms_sum(JobExecution.queue_time).label("queue_ms_sum"),
        func.count(JobExecution.queue_time).label("queue_n"),
        ms_sum(JobExecution.execution_time).label("execution_ms_sum"),
        func.count(JobExecution.execution_time).label("execution_n"),
        ms_sum(JobExecution.duration).label("duration_ms_sum"),
        func.count(JobExecution.duration).label("duration_n"),
    ).where(JobExecution.superseded_by.is_(None))
    query = query.group_by(JobExecution.downstream_repo, JobExecution.day, JobExecution.event_type)
    with engine.connect() as connection:
        rows = connection.execute(query).mappings().all()
    key = ("downstream_repo", "day", "event_type")
    return {
        tuple(r[k] for k in key): {k: int(v) for k, v in r.items() if k not in key} for r in rows
    }


def _daily_rollups(engine: Engine) -> dict[tuple[Any, ...], dict[str, int]]:
    with engine.connect() as connection:
        rows = connection.execute(select(DailyRollup.__table__)).mappings().all()
    key = ("downstream_repo", "day", "event_type")
    return {
        tuple(r[k] for k in key): {k: int(v) for k, v in r.items() if k not in key} for r in rows
    }


def _commits(engine: Engine) -> dict[tuple[Any, ...], tuple[int, datetime]]:
    with engine.connect() as connection:
        rows = connection.execute(select(Commit.__table__)).mappings().all()
    return {
        (r["downstream_repo"], r["pr_number"], r["head_sha"]): (r["jobs"], r["last_activity_at"])
        for r in rows
    }


def _commits_from_rows(engine: Engine) -> dict[tuple[Any, ...], tuple[int, datetime]]:
    query = select(
        JobExecution.downstream_repo,
        JobExecution.pr_number,
        JobExecution.head_sha,
        func.count(),
        func.max(JobExecution.activity_at),
    ).group_by(JobExecution.downstream_repo, JobExecution.pr_number, JobExecution.head_sha)
    with engine.connect() as connection:
        rows = connection.execute(query).all()
    return {(repo, pr, sha): (n, as_utc(last)) for repo, pr, sha, n, last in rows}


def as_utc(moment: datetime | str) -> datetime:
    """MAX() over SQLite's text timestamps comes back untyped."""
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment)
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _assert_rollups_match_rows(engine: Engine) -> None:
    assert _daily_rollups(engine) == _daily_from_rows(engine)
    with engine.connect() as connection:
        raw = connection.execute(
            select(
                JobExecution.downstream_repo,
                JobExecution.day,
                JobExecution.queue_time,
                JobExecution.execution_time,
            ).where(JobExecution.superseded_by.is_(None))
        ).all()
        stored_buckets = {
            (b.downstream_repo, b.day, b.metric, b.bucket): b.count
            for b in connection.execute(select(LatencyBucket.__table__)).all()
        }
    assert _commits(engine) == _commits_from_rows(engine)
    expected: Counter[tuple[Any, ...]] = Counter()
    for repo, day, queue, execution in raw:
        for metric, value in ((QUEUE_METRIC, queue), (EXECUTION_METRIC, execution)):
            if value is not None:
                expected[(repo, day, metric, latency_bucket(value))] += 1
    assert stored_buckets == dict(expected)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(write, min_size=1, max_size=25))
def test_rollups_equal_a_group_by_over_the_rows(
    migrated_engine: Engine, steps: list[dict[str, Any]]
) -> None:
    clear(migrated_engine)
    day = 0
    for step in steps:
        day = max(day, step["day"])  # the relay's clock does not go back
        apply(migrated_engine, step, day)
    _assert_rollups_match_rows(migrated_engine)


@pytest.mark.parametrize("seconds", [0.0, 0.4, 1.0, 59.9, 3600.0, 86400.0 * 3])
def test_a_bucket_stands_for_a_value_within_five_percent(seconds: float) -> None:
    value = bucket_value(latency_bucket(seconds))
    if seconds < 1:
        assert value < 1
    else:
        assert abs(value - seconds) / seconds < 0.05


def test_percentiles_walk_the_histogram_in_order() -> None:
    histogram = [(latency_bucket(s), 1) for s in range(1, 101)]

    p50 = percentile_from_buckets(histogram, 0.5)
    p99 = percentile_from_buckets(histogram, 0.99)

    assert p50 is not None and abs(p50 - 50) / 50 < 0.05
    assert p99 is not None and abs(p99 - 99) / 99 < 0.05
    assert percentile_from_buckets([], 0.5) is None

"""Which attempt counts and what it adds (pure): the level rollups' arithmetic."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

from crcr.hud.write.level_counted import (
    OVERRUN_MS,
    CountedJob,
    contribution,
    e2e_bucket,
    end_to_end_ms,
    recounted,
)

DAY = date(2026, 11, 20)
START = datetime(2026, 11, 20, 8, tzinfo=UTC)


def row(attempt: int, status: str = "completed", **changes: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "downstream_repo": "acme/xpu",
        "run_id": "7",
        "job_name": "test",
        "run_attempt": attempt,
        "job_key": f"key-{attempt}",
        "day": DAY,
        "status": status,
        "event_type": "pull_request",
        "conclusion": "success" if status == "completed" else None,
        "queue_time": 1.5,
        "execution_time": 60.0,
        "started_at": START,
        "completed_at": START + timedelta(minutes=1),
    }
    return {**values, **changes}


def job(**changes: Any) -> CountedJob:
    values: dict[str, Any] = {
        "downstream_repo": "acme/xpu",
        "run_id": "7",
        "job_name": "test",
        "run_attempt": 1,
        "job_key": "key-1",
        "day": DAY,
        "conclusion": "success",
        "queue_ms": 1500,
        "execution_ms": 60_000,
        "started_at": START,
        "completed_at": START,
    }
    return CountedJob(**{**values, **changes})


KEY = ("acme/xpu", "7", "test")


def test_a_completed_later_attempt_replaces_the_earlier_one() -> None:
    current, lost = recounted({}, [row(1, conclusion="failure"), row(2, "in_progress")])
    assert (current[KEY].run_attempt, current[KEY].conclusion) == (1, "failure")

    current, lost = recounted(current, [row(2)])
    assert (current[KEY].run_attempt, current[KEY].conclusion, lost) == (2, "success", set())


def test_an_earlier_attempt_arriving_late_changes_nothing() -> None:
    current, _ = recounted({}, [row(2), row(1, conclusion="failure")])

    assert current[KEY].run_attempt == 2


def test_push_jobs_do_not_count_and_a_counted_row_that_becomes_one_is_lost() -> None:
    current, lost = recounted({}, [row(1, event_type="push")])
    assert (current, lost) == ({}, set())

    current, lost = recounted({KEY: job()}, [row(1, event_type="push")])
    assert (current, lost) == ({}, {KEY})


def test_a_superseded_job_never_counts_and_a_counted_row_superseded_is_lost() -> None:
    late_failure = row(1, conclusion="failure", superseded_by="b" * 40)
    current, lost = recounted({}, [late_failure])
    assert (current, lost) == ({}, set())

    current, lost = recounted({KEY: job()}, [late_failure])
    assert (current, lost) == ({}, {KEY})


def test_what_a_counted_job_adds() -> None:
    assert contribution(job()) == {"jobs": 1, "success": 1, "queue_ms_sum": 1500, "queue_n": 1}
    assert contribution(job(conclusion="failure", queue_ms=None, execution_ms=OVERRUN_MS)) == {
        "jobs": 1
    }, "exactly 3 h is not an overrun"
    assert contribution(job(conclusion="failure", execution_ms=OVERRUN_MS + 1))["overrun"] == 1
    assert "overrun" not in contribution(job(conclusion="timed_out", execution_ms=10**9))


def test_end_to_end_time_is_queue_plus_first_start_to_last_completion() -> None:
    assert end_to_end_ms(START, START + timedelta(hours=2), 600_000) == 2 * 3_600_000 + 600_000
    assert end_to_end_ms(None, START, 0) is None
    assert end_to_end_ms(START, START + timedelta(seconds=1), None) == 1000


def test_e2e_buckets_are_ordered_like_the_times_they_hold() -> None:
    times = [0, 999, 1000, 1001, 60_000, 10_799_999, 10_800_000, 10_800_001, 10**9]
    buckets = [e2e_bucket(ms) for ms in times]

    assert buckets == sorted(buckets)
    assert buckets[0] == buckets[1] == 0

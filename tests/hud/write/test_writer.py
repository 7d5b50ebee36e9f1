"""The write path on real SQLite and PostgreSQL: upserts, re-runs, rollups kept exact."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
from datetime import UTC, date, datetime
from typing import Any

import pytest
from sqlalchemy import Engine, event, select
from tests.hud.hud_bodies import completed, our_body, reference_body

from crcr.hud.models import (
    LEVEL_DAILY,
    LEVEL_JOBS,
    LEVEL_RUNS,
    DailyRollup,
    JobExecution,
    LatencyBucket,
)
from crcr.hud.write.ingest import HudIngestor, parse_result_body
from crcr.hud.write.writer import purge_older_than, write_report, write_reports

DAY1 = datetime(2026, 11, 20, 10, 0, tzinfo=UTC)
DAY2 = datetime(2026, 11, 21, 9, 0, tzinfo=UTC)


def jobs(engine: Engine) -> list[Any]:
    with engine.connect() as connection:
        return list(connection.execute(select(JobExecution).order_by(JobExecution.id)).all())


def daily(engine: Engine) -> dict[tuple[str, date, str], dict[str, int]]:
    with engine.connect() as connection:
        rows = connection.execute(select(DailyRollup.__table__)).mappings().all()
    return {
        (r["downstream_repo"], r["day"], r["event_type"]): {
            k: v for k, v in r.items() if k not in ("downstream_repo", "day", "event_type") and v
        }
        for r in rows
    }


def store(engine: Engine, body: dict[str, Any], now: datetime = DAY1) -> str:
    return write_report(engine, parse_result_body(body), now)


def test_a_full_body_becomes_one_row_and_one_rollup(engine: Engine) -> None:
    assert store(engine, our_body()) == "created"

    [job] = jobs(engine)
    assert (job.downstream_repo, job.status, job.queue_time) == (
        "acme/xpu-backend",
        "in_progress",
        12.5,
    )
    assert job.started_at == datetime(2026, 11, 20, 10, 0, tzinfo=UTC)
    assert daily(engine) == {
        ("acme/xpu-backend", DAY1.date(), "pull_request"): {
            "jobs": 1,
            "in_progress": 1,
            "queue_ms_sum": 12500,
            "queue_n": 1,
        }
    }


def test_completed_keeps_what_in_progress_carried_and_moves_the_rollup(engine: Engine) -> None:
    first = our_body()
    store(engine, first)

    assert store(engine, completed(first, "success", execution_time=300.0)) == "updated"

    [job] = jobs(engine)
    assert (job.status, job.conclusion) == ("completed", "success")
    assert job.queue_time == 12.5, "a completed callback must not erase queue_time"
    assert job.started_at == datetime(2026, 11, 20, 10, 0, tzinfo=UTC)
    assert job.execution_time == 300.0 and job.duration == 300.0
    assert daily(engine)[("acme/xpu-backend", DAY1.date(), "pull_request")] == {
        "jobs": 1,
        "completed": 1,
        "success": 1,
        "queue_ms_sum": 12500,
        "queue_n": 1,
        "execution_ms_sum": 300000,
        "execution_n": 1,
        "duration_ms_sum": 300000,
        "duration_n": 1,
    }


def test_an_exact_repeat_changes_nothing(engine: Engine) -> None:
    store(engine, our_body())
    before = daily(engine)

    assert store(engine, our_body()) == "unchanged"

    assert daily(engine) == before and len(jobs(engine)) == 1


def test_a_rerun_is_a_separate_row(engine: Engine) -> None:
    store(engine, completed(our_body(), "failure"))
    store(engine, our_body(run_attempt="2", check_run_id="5002", queue_time=None))

    first, rerun = jobs(engine)
    assert (first.run_attempt, first.conclusion) == (1, "failure")
    assert (rerun.run_attempt, rerun.status, rerun.queue_time) == (2, "in_progress", None)
    counts = daily(engine)[("acme/xpu-backend", DAY1.date(), "pull_request")]
    assert (counts["jobs"], counts["failure"], counts["in_progress"]) == (2, 1, 1)


def test_a_late_completion_replaces_the_timeout_on_a_later_day(engine: Engine) -> None:
    first = our_body()
    store(engine, first, DAY1)
    store(engine, completed(first, "timed_out", execution_time=21600.0), DAY1)

    store(engine, completed(first, "success", execution_time=25000.0), DAY2)

    [job] = jobs(engine)
    assert (job.conclusion, job.execution_time, job.day) == ("success", 25000.0, DAY2.date())
    rollups = daily(engine)
    assert ("acme/xpu-backend", DAY1.date(), "pull_request") not in rollups
    moved = rollups[("acme/xpu-backend", DAY2.date(), "pull_request")]
    assert (moved["success"], moved.get("timed_out", 0), moved["execution_ms_sum"]) == (
        1,
        0,
        25_000_000,
    )
    with engine.connect() as connection:
        buckets = connection.execute(select(LatencyBucket.day, LatencyBucket.count)).all()
    assert {day for day, _ in buckets} == {DAY2.date()}


def test_in_progress_after_completed_only_fills_gaps(engine: Engine) -> None:
    first = our_body(queue_time=None)
    store(engine, completed(first, "success"))

    store(engine, our_body(queue_time=8.0))

    [job] = jobs(engine)
    assert (job.status, job.conclusion, job.queue_time) == ("completed", "success", 8.0)


def test_a_reference_relay_body_is_stored_with_its_echoed_context(engine: Engine) -> None:
    store(engine, reference_body(pr_number=77, head_sha="c" * 40, level="L2"))

    [job] = jobs(engine)
    assert (job.pr_number, job.head_sha, job.downstream_repo_level) == (77, "c" * 40, "L2")


def test_purge_drops_whole_days_of_rows_and_rollups(engine: Engine) -> None:
    store(engine, our_body(delivery_id="old"), DAY1)
    store(engine, our_body(delivery_id="new"), DAY2)

    assert purge_older_than(engine, DAY2.date()) == 1

    assert [job.delivery_id for job in jobs(engine)] == ["new"]
    assert {key[1] for key in daily(engine)} == {DAY2.date()}


async def test_concurrent_first_callbacks_of_one_job_write_one_row(engine: Engine) -> None:
    ingestor = HudIngestor(engine, clock=lambda: DAY1)

    outcomes = await asyncio.gather(*(ingestor.ingest(our_body()) for _ in range(8)))

    assert sorted(o.outcome for o in outcomes) == ["created"] + ["unchanged"] * 7
    assert daily(engine)[("acme/xpu-backend", DAY1.date(), "pull_request")]["jobs"] == 1


def test_a_batch_is_written_as_its_reports_would_be_one_by_one(engine: Engine) -> None:
    first, other = our_body(), our_body(delivery_id="delivery-2")
    reports = [(parse_result_body(b), DAY1) for b in (first, other, completed(first, "success"))]

    outcomes = write_reports(engine, reports)

    assert outcomes == ["created", "created", "updated"]
    assert [(job.delivery_id, job.conclusion) for job in jobs(engine)] == [
        ("delivery-1", "success"),
        ("delivery-2", None),
    ]
    assert daily(engine)[("acme/xpu-backend", DAY1.date(), "pull_request")]["jobs"] == 2


def test_a_report_that_cannot_be_stored_fails_alone_in_its_batch(engine: Engine) -> None:
    broken = dataclasses.replace(parse_result_body(our_body()), started_at=object())  # type: ignore[arg-type]
    fine = parse_result_body(our_body(delivery_id="delivery-2"))

    outcomes = write_reports(engine, [(broken, DAY1), (fine, DAY1)])

    assert isinstance(outcomes[0], Exception)
    assert outcomes[1] == "created"
    assert [job.delivery_id for job in jobs(engine)] == ["delivery-2"]


async def test_concurrent_ingests_of_many_jobs_are_grouped_and_all_stored(engine: Engine) -> None:
    ingestor = HudIngestor(engine, clock=lambda: DAY1, max_batch=8)
    bodies = [our_body(delivery_id=f"delivery-{n}") for n in range(40)]

    outcomes = await asyncio.gather(*(ingestor.ingest(body) for body in bodies))

    assert [o.outcome for o in outcomes] == ["created"] * 40
    assert len(jobs(engine)) == 40
    assert daily(engine)[("acme/xpu-backend", DAY1.date(), "pull_request")]["jobs"] == 40


def _connections_used(engine: Engine) -> tuple[set[int], Any]:
    used: set[int] = set()

    def note(connection: Any) -> None:
        used.add(id(connection.connection.dbapi_connection))

    return used, note


async def test_a_holding_sqlite_writer_keeps_one_connection_across_batches_and_gives_it_back(
    engine: Engine,
) -> None:
    if engine.dialect.name != "sqlite":
        pytest.skip("PostgreSQL writes go through the pool, in a worker thread")
    ingestor = HudIngestor(engine, clock=lambda: DAY1, max_batch=4, hold_connection=True)
    used, note = _connections_used(engine)
    event.listen(engine, "begin", note)
    try:
        bodies = [our_body(delivery_id=f"delivery-{n}") for n in range(12)]
        outcomes = await asyncio.gather(*(ingestor.ingest(body) for body in bodies))
        broken = dataclasses.replace(parse_result_body(our_body()), started_at=object())  # type: ignore[arg-type]
        with pytest.raises(Exception):  # noqa: B017 - whatever SQLite makes of it
            await ingestor.ingest_report(broken)
        after = await ingestor.ingest(our_body(delivery_id="delivery-after"))
    finally:
        event.remove(engine, "begin", note)
    checked_out = engine.pool.checkedout()  # type: ignore[attr-defined]
    await ingestor.close()

    assert [o.outcome for o in outcomes] == ["created"] * 12
    assert after.outcome == "created"
    assert len(jobs(engine)) == 13
    assert len(used) == 1  # three batches, a failed write, and the next: one connection
    assert checked_out == 1
    assert engine.pool.checkedout() == 0  # type: ignore[attr-defined]


async def test_an_ingestor_dropped_unclosed_gives_its_held_connection_back(
    engine: Engine,
) -> None:
    if engine.dialect.name != "sqlite":
        pytest.skip("only the SQLite writer holds a connection")
    ingestor = HudIngestor(engine, clock=lambda: DAY1, hold_connection=True)
    await ingestor.ingest(our_body())
    held = engine.pool.checkedout()  # type: ignore[attr-defined]

    del ingestor
    gc.collect()

    assert held == 1
    assert engine.pool.checkedout() == 0  # type: ignore[attr-defined]


async def test_an_ingestor_holds_no_connection_unless_asked(engine: Engine) -> None:
    ingestor = HudIngestor(engine, clock=lambda: DAY1)

    await asyncio.gather(*(ingestor.ingest(our_body(delivery_id=f"d-{n}")) for n in range(5)))

    assert engine.pool.checkedout() == 0  # type: ignore[attr-defined]
    assert len(jobs(engine)) == 5


def test_a_batch_finds_the_level_entries_of_jobs_named_outside_ascii(engine: Engine) -> None:
    """The batch's keys reach SQLite as one JSON array (`driver_sql.json_array`): a job
    name it did not match would be counted twice."""
    body = our_body(job="tëst 🚀 — ünïcode", run_id="77")
    for conclusion in ("success", "failure"):  # a late completion replaces the first
        write_reports(engine, [(parse_result_body(completed(body, conclusion)), DAY1)])
    write_reports(engine, [(parse_result_body(completed(body, "failure")), DAY2)])

    with engine.connect() as connection:
        counted = connection.execute(select(LEVEL_JOBS)).mappings().all()
        daily_levels = connection.execute(select(LEVEL_DAILY)).mappings().all()
        runs = connection.execute(select(LEVEL_RUNS)).mappings().all()
    assert [(r["job_name"], r["conclusion"]) for r in counted] == [("tëst 🚀 — ünïcode", "failure")]
    assert [(r["jobs"], r["success"]) for r in daily_levels] == [(1, 0)]
    assert [r["run_id"] for r in runs] == ["77"]


async def test_a_closed_holding_writer_writes_on_pooled_connections(engine: Engine) -> None:
    ingestor = HudIngestor(engine, clock=lambda: DAY1, hold_connection=True)
    await ingestor.ingest(our_body())
    await ingestor.close()

    late = await ingestor.ingest(our_body(delivery_id="late"))

    assert late.outcome == "created"
    assert engine.pool.checkedout() == 0  # type: ignore[attr-defined]

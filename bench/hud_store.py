"""How the HUD results store holds up at volume: load, ingest rate, read latencies.

Run: `python -m bench.hud_store --rows N --db URL` (URL: `sqlite:///path.db` or a
`postgresql://` URL; PostgreSQL runs in a private schema that is dropped afterwards).

1. Bulk-load N job rows spread over `--days` days and `--backends` backends, with their
   rollups computed by the same pure code as the write path (`crcr.hud.write.rollups`) and
   the level rollups by migration 0004's backfill (`crcr.hud.levels.backfill`). Half
   the backends are L2 (judged over 14 days), half L3 (7 days).
2. Ingest `--ingest` bodies (in_progress then completed) through `HudIngestor`, the real
   write path, with `--concurrency` callers: rows written per second.
3. Time the summary and level-status endpoints (HTTP, in-process ASGI), the backend
   page query, and the baseline the reference HUD's approach implies: one GROUP BY over
   every job row in the window.
4. Time the baseline verdicts of one PR with 50 failed jobs (`bench.baseline_verdicts`).

One commit in 20 is a push (the default branch's results, which baseline verdicts
compare against), spread over every backend; failed jobs name a failed test.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI
from pydantic import SecretStr
from sqlalchemy import Engine, case, create_engine, func, insert, select, text

from bench.baseline_verdicts import time_baseline
from crcr.hud.component import Hud, mount_hud
from crcr.hud.db import create_results_engine, migrate, normalise_url, write_transaction
from crcr.hud.levels.backfill import backfill_levels
from crcr.hud.models import JOBS, JobExecution
from crcr.hud.queries import HudQueries
from crcr.hud.write.ingest import HudIngestor
from crcr.hud.write.rollups import RollupSums
from crcr.hud.write.writer import apply_rollup_change

JOBS_PER_COMMIT = ["build", "lint", *(f"test-{i}" for i in range(1, 9))]
CONCLUSIONS = ["success"] * 85 + ["failure"] * 10 + ["cancelled"] * 3 + ["timed_out"] * 2
BATCH = 20_000
_FAILED_TEST = [f'{{"tests":[{{"name":"test_op_{i}"}}],"dropped":0}}' for i in range(7)]


def _rows(total: int, backends: int, days: int, now: datetime) -> Iterator[dict[str, Any]]:
    rng = random.Random(7)
    commit_at = now
    for index in range(total):
        commit = index // len(JOBS_PER_COMMIT)
        repo = f"org{commit % backends}/backend"
        if index % len(JOBS_PER_COMMIT) == 0:
            commit_at = now - timedelta(seconds=rng.uniform(3600, days * 86400 - 1))
        # A commit's jobs finish within the hour after it, as one workflow run's do.
        at = commit_at + timedelta(seconds=rng.uniform(0, 3600))
        queue, execution = rng.lognormvariate(4, 1.2), rng.lognormvariate(7, 0.8)
        in_progress = rng.random() < 0.02
        conclusion = None if in_progress else rng.choice(CONCLUSIONS)
        push = (commit // backends) % 20 == 0
        failed = conclusion in ("failure", "timed_out")
        yield {
            "job_key": f"bench-{index}",
            "downstream_repo": repo,
            "downstream_repo_level": f"L{2 + commit % backends % 2}",
            "upstream_repo": "pytorch/pytorch",
            "event_type": "push" if push else "pull_request",
            "pr_number": 0 if push else 100_000 + commit // backends,
            "head_sha": f"{commit:040x}",
            "delivery_id": f"delivery-{commit}",
            "workflow_name": "CI",
            "job_name": JOBS_PER_COMMIT[index % len(JOBS_PER_COMMIT)],
            "run_id": str(commit),
            "run_attempt": 1,
            "check_run_id": str(index),
            "status": "in_progress" if in_progress else "completed",
            "conclusion": conclusion,
            "started_at": at - timedelta(seconds=execution),
            "completed_at": None if in_progress else at,
            "queue_time": round(queue, 3),
            "execution_time": None if in_progress else round(execution, 3),
            "duration": None if in_progress else round(execution, 3),
            "passed": 1000,
            "failed": 0 if conclusion == "success" else 3,
            "skipped": 10,
            "total_tests": 1013,
            "workflow_run_url": f"https://github.com/{repo}/actions/runs/{commit}",
            "artifact_url": None,
            "failed_tests": _FAILED_TEST[rng.randrange(7)] if failed else None,
            "received_at": at,
            "updated_at": at,
            "activity_at": at,
            "day": at.date(),
        }


def _insert_jobs(engine: Engine, batch: list[dict[str, Any]]) -> None:
    """One batch of job rows: COPY on PostgreSQL, executemany on SQLite."""
    if engine.dialect.name != "postgresql":
        with engine.begin() as connection:
            connection.execute(insert(JOBS), batch)
        return
    columns = list(batch[0])
    raw = engine.raw_connection()
    try:
        statement = f"COPY hud_jobs ({', '.join(columns)}) FROM STDIN"
        with raw.cursor() as cursor, cursor.copy(statement) as copy:  # type: ignore[attr-defined]
            for row in batch:
                copy.write_row([row[name] for name in columns])
        raw.commit()
    finally:
        raw.close()


def bulk_load(engine: Engine, rows: int, backends: int, days: int, now: datetime) -> float:
    """Insert rows in batches plus their rollups; returns seconds taken."""
    started = time.perf_counter()
    rollups = RollupSums()  # what the write path would have counted, row by row
    batch: list[dict[str, Any]] = []
    for row in _rows(rows, backends, days, now):
        batch.append(row)
        rollups.add_row(row, 1)
        if len(batch) == BATCH:
            _insert_jobs(engine, batch)
            batch = []
    if batch:
        _insert_jobs(engine, batch)
    with write_transaction(engine) as connection:
        apply_rollup_change(connection, rollups.change())
        connection.execute(
            text(
                "INSERT INTO hud_backends (repo, level, first_seen_at, last_run_at) "
                "SELECT downstream_repo, MAX(downstream_repo_level), MIN(activity_at), "
                "MAX(activity_at) "
                "FROM hud_jobs GROUP BY downstream_repo"
            )
        )
        connection.execute(
            text(
                "INSERT INTO hud_commits (downstream_repo, pr_number, head_sha, event_type, "
                "jobs, last_activity_at) SELECT downstream_repo, pr_number, head_sha, "
                "MAX(event_type), COUNT(*), MAX(activity_at) FROM hud_jobs "
                "GROUP BY downstream_repo, pr_number, head_sha"
            )
        )
        levels_started = time.perf_counter()
        backfill_levels(connection)
        print(f"level rollups backfilled in {time.perf_counter() - levels_started:.1f} s")
    with engine.begin() as connection:
        connection.execute(text("ANALYZE"))
    return time.perf_counter() - started


def results_body(index: int, status: str) -> dict[str, Any]:
    """The SPEC §6 body of job `index` reporting `status` (shared with bench.hud_write)."""
    workflow: dict[str, Any] = {
        "schema_version": "1",
        "status": status,
        "conclusion": "success" if status == "completed" else None,
        "name": "CI",
        "url": "https://github.com/org0/backend/actions/runs/1",
        "run_id": str(index),
        "run_attempt": "1",
        "job_name": JOBS_PER_COMMIT[index % len(JOBS_PER_COMMIT)],
        "check_run_id": str(index),
        "started_at": "2026-11-20T10:00:00Z",
        "completed_at": "2026-11-20T10:30:00Z" if status == "completed" else None,
        "test_results": {"passed": 10, "failed": 0, "skipped": 1},
    }
    in_progress = status == "in_progress"
    return {
        "trusted": {
            "verified_repo": f"org{index % 12}/backend",
            "downstream_repo_level": "L3",
            "ci_metrics": {
                "queue_time": 30.0 if in_progress else None,
                "execution_time": None if in_progress else 1800.0,
            },
            "dispatch": {
                "upstream_repo": "pytorch/pytorch",
                "event_type": "pull_request",
                "head_sha": f"{index:040x}",
                "pr_number": 900_000 + index // 10,
            },
        },
        "untrusted": {
            "callback_payload": {
                "event_type": "pull_request",
                "delivery_id": f"ingest-{index // 10}",
                "payload": {},
                "workflow": workflow,
            }
        },
    }


async def ingest_rate(engine: Engine, jobs: int, concurrency: int) -> float:
    """Rows written per second through `HudIngestor` (each job: in_progress, completed)."""
    ingestor = HudIngestor(engine)
    semaphore = asyncio.Semaphore(concurrency)

    async def one(index: int) -> None:
        async with semaphore:
            await ingestor.ingest(results_body(index, "in_progress"))
            await ingestor.ingest(results_body(index, "completed"))

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(jobs)))
    return 2 * jobs / (time.perf_counter() - started)


async def timed(call: Callable[[], Awaitable[Any]], samples: int) -> list[float]:
    """Milliseconds per call, after one warm-up call."""
    await call()
    result = []
    for _ in range(samples):
        started = time.perf_counter()
        await call()
        result.append((time.perf_counter() - started) * 1000)
    return result


def raw_scan_summary(engine: Engine, since: datetime) -> int:
    """The reference's approach: aggregate every job row in the window on each view."""
    query = (
        select(
            JobExecution.downstream_repo,
            JobExecution.day,
            func.count(),
            func.sum(case((JobExecution.conclusion == "success", 1), else_=0)),
            func.sum(case((JobExecution.conclusion == "failure", 1), else_=0)),
            func.sum(case((JobExecution.conclusion == "timed_out", 1), else_=0)),
            func.avg(JobExecution.queue_time),
            func.avg(JobExecution.execution_time),
            func.max(JobExecution.activity_at),
        )
        .where(JobExecution.activity_at >= since, JobExecution.status == "completed")
        .group_by(JobExecution.downstream_repo, JobExecution.day)
    )
    with engine.connect() as connection:
        return len(connection.execute(query).all())


def _pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


async def run(args: argparse.Namespace) -> None:
    url = normalise_url(args.db)
    schema = None
    if url.startswith("postgresql"):
        schema = f"crcr_bench_{uuid.uuid4().hex[:8]}"
        admin = create_engine(url)
        with admin.begin() as connection:
            connection.execute(text(f'CREATE SCHEMA "{schema}"'))
        url = f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"
    else:
        await asyncio.to_thread(Path(url.removeprefix("sqlite:///")).unlink, missing_ok=True)
    engine = create_results_engine(url, pool_size=args.concurrency)
    try:
        migrate(engine)
        now = datetime.now(UTC)
        load_seconds = bulk_load(engine, args.rows, args.backends, args.days, now)
        print(f"bulk load: {args.rows:,} rows in {load_seconds:.1f} s")
        rate = await ingest_rate(engine, args.ingest, args.concurrency)
        print(f"ingest path: {rate:,.0f} rows/s ({args.concurrency} concurrent callers)")

        app = FastAPI()
        app.state.hud = Hud(engine, HudIngestor(engine), HudQueries(engine), SecretStr("x"), 90)
        mount_hud(app)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://hud") as http:

            async def summary() -> None:
                response = await http.get(f"/api/crcr/summary?days={args.window}")
                response.raise_for_status()

            async def level_status() -> None:
                response = await http.get("/api/crcr/level-status")
                response.raise_for_status()

            summary_ms = await timed(summary, args.samples)
            levels_ms = await timed(level_status, args.samples)
        queries = HudQueries(engine)
        page_ms = await timed(lambda: queries.backend("org3/backend", args.window), args.samples)
        since = datetime.combine(
            now.date() - timedelta(days=args.window - 1), datetime.min.time(), UTC
        )
        scan_ms = await timed(
            lambda: asyncio.to_thread(raw_scan_summary, engine, since), max(3, args.samples // 10)
        )
        for name, samples in (
            (f"summary API ({args.window} d)", summary_ms),
            ("level-status API", levels_ms),
            ("backend page query", page_ms),
        ):
            print(f"{name}: p50 {_pct(samples, 50):.1f} ms, p99 {_pct(samples, 99):.1f} ms")
        print(f"baseline raw-row GROUP BY: p50 {statistics.median(scan_ms):.1f} ms")
        repos = [f"org{i}/backend" for i in range(min(5, args.backends))]
        classified = await time_baseline(
            engine, datetime.now(UTC), repos, JOBS_PER_COMMIT, timed, args.samples
        )
        for name, samples in classified.items():
            print(f"{name}: p50 {_pct(samples, 50):.1f} ms, p99 {_pct(samples, 99):.1f} ms")
    finally:
        engine.dispose()
        if schema is not None and args.keep:
            print(f"kept PostgreSQL schema {schema}")
        elif schema is not None:
            with admin.begin() as connection:
                connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
            admin.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--db", default="sqlite:///./crcr-bench/hud.db")
    parser.add_argument("--backends", type=int, default=12)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--window", type=int, default=30)
    parser.add_argument("--ingest", type=int, default=2000, help="jobs through the ingest path")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--keep", action="store_true", help="keep the PostgreSQL schema")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()

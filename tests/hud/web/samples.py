"""Query results built by hand, for testing the view layer without a results store."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

from crcr.hud.reads.backend import BackendPage, BackendStats, JobAttempt, JobCell, Pagination, PrRow
from crcr.hud.reads.latency import LatencyPoint
from crcr.hud.reads.summary import BackendSummaryRow, TrendPoint
from crcr.hud.records import JobRow

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
DAYS = tuple(date(2026, 3, 4) + timedelta(days=i) for i in range(7))


def summary_row(repo: str, level: str | None, rate: float | None, **kw: Any) -> BackendSummaryRow:
    trend = tuple(TrendPoint(day, 10, round((rate or 0) * 10), rate) for day in DAYS)
    fields: dict[str, Any] = {
        "repo": repo,
        "level": level,
        "active": rate is not None,
        "successes": 9,
        "failures": 1,
        "timed_out": 0,
        "total": 10,
        "in_progress": 0,
        "pass_rate": rate,
        "avg_queue_time": 12.5,
        "avg_execution_time": 600.0,
        "last_run": NOW - timedelta(hours=2),
        "trend": trend if rate is not None else (),
    }
    fields.update(kw)
    return BackendSummaryRow(**fields)


def cell(column: str, conclusion: str | None, **kw: Any) -> JobCell:
    workflow, _, job = column.partition(" / ")
    fields: dict[str, Any] = {
        "column": column,
        "workflow_name": workflow,
        "job_name": job,
        "status": "completed" if conclusion else "in_progress",
        "conclusion": conclusion,
        "run_url": "https://github.com/org/be/actions/runs/1",
        "artifact_url": None,
        "passed": 40,
        "failed": 0 if conclusion == "success" else 2,
        "skipped": 3,
        "total_tests": 45,
        "queue_time": 5.0,
        "duration": 300.0,
        "run_attempt": 1,
        "started_at": NOW - timedelta(minutes=10),
        "completed_at": NOW - timedelta(minutes=5) if conclusion else None,
    }
    fields.update(kw)
    return JobCell(**fields)


def backend_page(rows: tuple[PrRow, ...], columns: tuple[str, ...]) -> BackendPage:
    return BackendPage(
        repo="org/be",
        level="L3",
        window_days=7,
        stats=BackendStats(
            total=20,
            successes=18,
            failures=1,
            timed_out=1,
            pass_rate=0.9,
            timeout_rate=0.05,
            pr_count=len(rows),
            avg_queue_time=30.0,
            avg_execution_time=900.0,
        ),
        columns=columns,
        rows=rows,
        pagination=Pagination(page=1, per_page=25, total_rows=len(rows), pages=1),
    )


def pr_row(number: int, sha: str, cells: dict[str, JobCell]) -> PrRow:
    return PrRow(
        pr_number=number,
        head_sha=sha,
        event_type="pull_request",
        last_activity=NOW,
        cells=cells,
    )


def attempt(n: int, conclusion: str) -> JobAttempt:
    return JobAttempt(
        run_attempt=n,
        status="completed",
        conclusion=conclusion,
        run_url=f"https://github.com/org/be/actions/runs/1/attempts/{n}",
        completed_at=NOW - timedelta(hours=n),
    )


def record(job: str, conclusion: str | None, attempt: int = 1, **kw: Any) -> JobRow:
    fields: dict[str, Any] = {
        "downstream_repo": "org/be",
        "downstream_repo_level": "L3",
        "upstream_repo": "pytorch/pytorch",
        "event_type": "pull_request",
        "pr_number": 7,
        "head_sha": "a" * 40,
        "delivery_id": "d1",
        "workflow_name": "ci",
        "job_name": job,
        "run_id": "100",
        "run_attempt": attempt,
        "check_run_id": f"{job}-{attempt}",
        "status": "completed" if conclusion else "in_progress",
        "conclusion": conclusion,
        "started_at": NOW - timedelta(minutes=30),
        "completed_at": NOW - timedelta(minutes=30 - attempt) if conclusion else None,
        "queue_time": 4.0,
        "execution_time": 120.0,
        "passed": 10,
        "failed": 0,
        "skipped": 0,
        "total_tests": 10,
        "workflow_run_url": "https://github.com/org/be/actions/runs/100",
        "artifact_url": None,
    }
    fields.update(kw)
    return JobRow(**fields)


def latency(repo: str, day: date, p50: float | None, samples: int = 5) -> LatencyPoint:
    return LatencyPoint(
        repo=repo,
        day=day,
        queue_samples=samples if p50 is not None else 0,
        queue_p50=p50,
        queue_p90=None if p50 is None else p50 * 2,
        queue_p99=None if p50 is None else p50 * 4,
        execution_samples=samples if p50 is not None else 0,
        execution_p50=None if p50 is None else p50 * 60,
        execution_p90=None if p50 is None else p50 * 90,
        execution_p99=None if p50 is None else p50 * 120,
    )

"""Builders of the PR job reports the level tests write, and a check that rollups match rows."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, delete, select
from tests.hud.hud_bodies import our_body

from crcr.hud.db import write_transaction
from crcr.hud.levels.backfill import backfill_levels
from crcr.hud.models import LEVEL_HISTORY
from crcr.hud.write.ingest import parse_result_body
from crcr.hud.write.report import JobReport
from crcr.hud.write.writer import LEVEL_TABLES, write_reports

REPO = "acme/xpu-backend"
NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
START = datetime(2026, 11, 20, 8, 0, tzinfo=UTC)


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def pr_job(
    run: int | str,
    job: str = "test",
    *,
    attempt: int = 1,
    conclusion: str | None = "success",
    repo: str = REPO,
    level: str = "L3",
    event_type: str = "pull_request",
    queue: float | None = 60.0,
    execution: float | None = 600.0,
    started: datetime | None = START,
    completed: datetime | None = START + timedelta(minutes=10),
) -> JobReport:
    """One job's report; completed unless `conclusion` is None (then in progress)."""
    done = conclusion is not None
    return parse_result_body(
        our_body(
            repo=repo,
            level=level,
            event_type=event_type,
            delivery_id=f"delivery-{run}",
            run_id=str(run),
            run_attempt=str(attempt),
            job=job,
            check_run_id=f"{run}-{job}-{attempt}",
            status="completed" if done else "in_progress",
            conclusion=conclusion,
            queue_time=queue,
            execution_time=execution if done else None,
            started_at=None if started is None else iso(started),
            completed_at=iso(completed) if done and completed is not None else None,
        )
    )


def write(engine: Engine, reports: Iterable[JobReport], now: datetime = NOW) -> None:
    """Write the reports in one batch, as the ingestor does under load."""
    outcomes = write_reports(engine, [(report, now) for report in reports])
    failures = [outcome for outcome in outcomes if isinstance(outcome, Exception)]
    assert not failures, failures


def _snapshot(engine: Engine) -> dict[str, list[dict[str, Any]]]:
    with engine.connect() as connection:
        return {
            table.name: sorted(
                (dict(row) for row in connection.execute(select(table)).mappings()),
                key=lambda row: sorted((k, str(v)) for k, v in row.items()),
            )
            for table in LEVEL_TABLES
        }


def assert_level_rollups_match_rows(engine: Engine) -> None:
    """The rollups kept on write equal the ones computed afresh from the job rows."""
    kept = _snapshot(engine)
    with write_transaction(engine) as connection:
        for table in (*LEVEL_TABLES, LEVEL_HISTORY):
            connection.execute(delete(table))
        backfill_levels(connection)
    assert _snapshot(engine) == kept

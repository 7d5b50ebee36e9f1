"""The results store's write path: upsert a job row and adjust its rollups in one transaction.

Every write reads the stored row under a lock (`FOR UPDATE` on PostgreSQL, `BEGIN
IMMEDIATE` on SQLite), merges the report into it, and applies the net rollup change of
old row to new row, so rollups always equal an aggregate over the raw rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, Table, and_, case, delete, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError

from crcr.hud.db import write_transaction
from crcr.hud.merge import merged_row, row_facts
from crcr.hud.models import Backend, DailyPr, DailyRollup, Job, LatencyBucket
from crcr.hud.rollups import RollupChange, rollup_change

if TYPE_CHECKING:
    from crcr.hud.ingest import JobReport

JOBS: Table = Job.__table__  # type: ignore[assignment]
DAILY: Table = DailyRollup.__table__  # type: ignore[assignment]
PRS: Table = DailyPr.__table__  # type: ignore[assignment]
BUCKETS: Table = LatencyBucket.__table__  # type: ignore[assignment]
BACKENDS: Table = Backend.__table__  # type: ignore[assignment]
_INSERT_RACE_RETRIES = 3


def write_report(engine: Engine, report: JobReport, now: datetime | None = None) -> str:
    """Store one report; returns "created", "updated" or "unchanged"."""
    now = now or datetime.now(UTC)
    for attempt in range(_INSERT_RACE_RETRIES):
        try:
            with write_transaction(engine) as connection:
                return _write(connection, report, now)
        except IntegrityError:
            # Two first callbacks of one job raced on PostgreSQL; the loser retries and
            # finds the winner's row to update.
            if attempt == _INSERT_RACE_RETRIES - 1:
                raise
    raise AssertionError("unreachable")


def _write(connection: Connection, report: JobReport, now: datetime) -> str:
    query = select(JOBS).where(JOBS.c.job_key == report.job_key)
    if connection.dialect.name == "postgresql":
        query = query.with_for_update()
    stored = connection.execute(query).mappings().first()
    if stored is None:
        row = merged_row(None, report, now)
        connection.execute(insert(JOBS).values(row))
        change = rollup_change(None, row_facts(row))
        outcome = "created"
    else:
        old = dict(stored)
        row = merged_row(old, report, now)
        changed = {k: v for k, v in row.items() if old.get(k) != v}
        if not changed:
            return "unchanged"
        connection.execute(update(JOBS).where(JOBS.c.id == old["id"]).values(changed))
        change = rollup_change(row_facts(old), row_facts(row))
        outcome = "updated"
    apply_rollup_change(connection, change)
    _touch_backend(connection, row["downstream_repo"], row["downstream_repo_level"], now)
    return outcome


def _upsert(connection: Connection, table: Table, values: Mapping[str, Any]) -> Any:
    if connection.dialect.name == "postgresql":
        return postgresql.insert(table).values(values)
    return sqlite.insert(table).values(values)


def _add_counts(
    connection: Connection, table: Table, key: Mapping[str, Any], deltas: Mapping[str, int]
) -> None:
    """Add `deltas` to the row at `key`, creating it; drop it when it counts nothing."""
    statement = _upsert(connection, table, {**key, **deltas})
    statement = statement.on_conflict_do_update(
        index_elements=list(key),
        set_={name: table.c[name] + statement.excluded[name] for name in deltas},
    )
    connection.execute(statement)
    size = "count" if "count" in table.c else "jobs"
    if deltas.get(size, 0) < 0:
        where = and_(*(table.c[k] == v for k, v in key.items()), table.c[size] <= 0)
        connection.execute(delete(table).where(where))


def apply_rollup_change(connection: Connection, change: RollupChange) -> None:
    """Apply net rollup deltas (the caller holds the transaction)."""
    for (repo, day, event_type), deltas in change.daily.items():
        key = {"downstream_repo": repo, "day": day, "event_type": event_type}
        _add_counts(connection, DAILY, key, deltas)
    for (repo, day, event_type, pr_number), n in change.prs.items():
        key = {"downstream_repo": repo, "day": day, "event_type": event_type}
        _add_counts(connection, PRS, {**key, "pr_number": pr_number}, {"jobs": n})
    for (repo, day, metric, bucket), n in change.buckets.items():
        key = {"downstream_repo": repo, "day": day, "metric": metric, "bucket": bucket}
        _add_counts(connection, BUCKETS, key, {"count": n})


def _touch_backend(connection: Connection, repo: str, level: str | None, now: datetime) -> None:
    values = {"repo": repo, "level": level, "first_seen_at": now, "last_run_at": now}
    statement = _upsert(connection, BACKENDS, values)
    newer = statement.excluded.last_run_at > BACKENDS.c.last_run_at
    statement = statement.on_conflict_do_update(
        index_elements=["repo"],
        set_={
            "level": case(
                (statement.excluded.level.is_(None), BACKENDS.c.level),
                else_=statement.excluded.level,
            ),
            "last_run_at": case(
                (newer, statement.excluded.last_run_at), else_=BACKENDS.c.last_run_at
            ),
        },
    )
    connection.execute(statement)


def purge_older_than(engine: Engine, cutoff: date) -> int:
    """Delete job rows and rollups of days before `cutoff`; returns the job rows deleted.

    Whole days go at once, so rollups of the days kept still match their rows.
    """
    with write_transaction(engine) as connection:
        deleted = connection.execute(delete(JOBS).where(JOBS.c.day < cutoff)).rowcount
        for table in (DAILY, PRS, BUCKETS):
            connection.execute(delete(table).where(table.c.day < cutoff))
    return int(deleted or 0)

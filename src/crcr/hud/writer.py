"""The results store's write path: upsert a job row and adjust its rollups in one transaction.

Every write reads the stored row under a lock (`FOR UPDATE` on PostgreSQL, `BEGIN
IMMEDIATE` on SQLite), merges the report into it, and applies the net rollup change of
old row to new row, so rollups always equal an aggregate over the raw rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, time
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, delete
from sqlalchemy.exc import IntegrityError

from crcr.hud.db import write_transaction
from crcr.hud.merge import merged_row, row_facts
from crcr.hud.rollups import RollupChange, rollup_change
from crcr.hud.statements import (
    BUCKETS,
    COMMIT_KEY,
    COMMITS,
    DAILY,
    JOB_COLUMNS,
    JOBS,
    PRS,
    RollupTable,
    WriteStatements,
    write_statements,
)

if TYPE_CHECKING:
    from crcr.hud.ingest import JobReport

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


def write_reports(
    engine: Engine, reports: Sequence[tuple[JobReport, datetime]]
) -> list[str | Exception]:
    """Store several reports in one transaction; each gets its outcome or its exception.

    One commit for many callbacks is what keeps the in-process HUD off the callback's
    critical path under load. Reports are applied in job-key order (a job's reports
    keep their order), so concurrent instances lock rows in the same order. If the
    batch fails, each report is written on its own, so one bad report fails alone.
    """
    ordered = sorted(range(len(reports)), key=lambda i: reports[i][0].job_key)
    if len(reports) > 1:
        try:
            outcomes: dict[int, str | Exception] = {}
            with write_transaction(engine) as connection:
                for index in ordered:
                    report, now = reports[index]
                    outcomes[index] = _write(connection, report, now)
            return [outcomes[index] for index in range(len(reports))]
        except Exception:  # noqa: S110 - retried one by one just below
            pass
    results: list[str | Exception] = []
    for report, now in reports:
        try:
            results.append(write_report(engine, report, now))
        except Exception as exc:
            results.append(exc)
    return results


def _write(connection: Connection, report: JobReport, now: datetime) -> str:
    sql = write_statements(connection.dialect.name)
    lookup = (
        sql.select_job_for_update if connection.dialect.name == "postgresql" else sql.select_job
    )
    stored = connection.execute(lookup, {"job_key": report.job_key}).mappings().first()
    old: dict[str, Any] | None = None
    if stored is None:
        row = merged_row(None, report, now)
        connection.execute(sql.insert_job, row)
        change = rollup_change(None, row_facts(row))
        outcome = "created"
    else:
        old = dict(stored)
        row = merged_row(old, report, now)
        if all(old.get(k) == v for k, v in row.items()):
            return "unchanged"
        params = {f"v_{name}": row[name] for name in JOB_COLUMNS}
        connection.execute(sql.update_job, {"row_id": old["id"], **params})
        change = rollup_change(row_facts(old), row_facts(row))
        outcome = "updated"
    apply_rollup_change(connection, change)
    _track_commit(connection, sql, old, row)
    connection.execute(
        sql.touch_backend,
        {
            "repo": row["downstream_repo"],
            "level": row["downstream_repo_level"],
            "first_seen_at": now,
            "last_run_at": now,
        },
    )
    return outcome


def _track_commit(
    connection: Connection,
    sql: WriteStatements,
    old: Mapping[str, Any] | None,
    row: Mapping[str, Any],
) -> None:
    """Keep the row's commit entry: its job count and latest activity."""

    def commit(values: Mapping[str, Any], jobs: int) -> dict[str, Any]:
        return {
            "downstream_repo": values["downstream_repo"],
            "pr_number": values["pr_number"],
            "head_sha": values["head_sha"],
            "event_type": values["event_type"],
            "jobs": jobs,
            "last_activity_at": values["activity_at"],
        }

    key = tuple(row[name] for name in COMMIT_KEY)
    if old is None:
        connection.execute(sql.add_commit, commit(row, 1))
    elif tuple(old[name] for name in COMMIT_KEY) != key:
        connection.execute(sql.add_commit, commit(old, -1))
        connection.execute(sql.drop_empty_commit, {name: old[name] for name in COMMIT_KEY})
        connection.execute(sql.add_commit, commit(row, 1))
    elif (old["activity_at"], old["event_type"]) != (row["activity_at"], row["event_type"]):
        connection.execute(sql.add_commit, commit(row, 0))


def _add_counts(
    connection: Connection, table: RollupTable, deltas: Mapping[tuple[Any, ...], Mapping[str, int]]
) -> None:
    """Add each key's deltas to its rollup row, creating it; drop rows left counting nothing."""
    if not deltas:
        return
    params = [
        {**dict(zip(table.key, key, strict=True)), **{c: d.get(c, 0) for c in table.counters}}
        for key, d in deltas.items()
    ]
    connection.execute(table.add, params)
    size = "count" if "count" in table.counters else "jobs"
    emptied = [
        dict(zip(table.key, key, strict=True)) for key, d in deltas.items() if d.get(size, 0) < 0
    ]
    if emptied:
        connection.execute(table.drop_empty, emptied)


def apply_rollup_change(connection: Connection, change: RollupChange) -> None:
    """Apply net rollup deltas (the caller holds the transaction)."""
    sql = write_statements(connection.dialect.name)
    _add_counts(connection, sql.daily, change.daily)
    _add_counts(connection, sql.prs, {key: {"jobs": n} for key, n in change.prs.items()})
    _add_counts(connection, sql.buckets, {key: {"count": n} for key, n in change.buckets.items()})


def purge_older_than(engine: Engine, cutoff: date) -> int:
    """Delete job rows and rollups of days before `cutoff`; returns the job rows deleted.

    Whole days go at once, so rollups of the days kept still match their rows. A commit
    with rows on both sides of the cutoff keeps its entry with its job count as written.
    """
    with write_transaction(engine) as connection:
        deleted = connection.execute(delete(JOBS).where(JOBS.c.day < cutoff)).rowcount
        for table in (DAILY, PRS, BUCKETS):
            connection.execute(delete(table).where(table.c.day < cutoff))
        midnight = datetime.combine(cutoff, time.min, tzinfo=UTC)
        connection.execute(delete(COMMITS).where(COMMITS.c.last_activity_at < midnight))
    return int(deleted or 0)

"""The results store's write path: upsert a job row and adjust its rollups in one transaction.

Every write reads the stored row under a lock (`FOR UPDATE` on PostgreSQL, `BEGIN
IMMEDIATE` on SQLite), merges the report into it, and applies the net rollup change of
old row to new row, so rollups always equal an aggregate over the raw rows.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, time
from itertools import compress
from operator import ne
from typing import Any

from sqlalchemy import Connection, Engine, delete
from sqlalchemy.exc import IntegrityError

from crcr.hud.db import write_transaction
from crcr.hud.models import (
    BUCKETS,
    COMMITS,
    DAILY,
    JOBS,
    LEVEL_DAILY,
    LEVEL_E2E_BUCKETS,
    LEVEL_JOBS,
    LEVEL_RUNS,
)
from crcr.hud.write.driver_sql import execute_many, fetch_rows, json_array
from crcr.hud.write.level_rollups import Write, record_levels
from crcr.hud.write.merge import merged_row, same_values
from crcr.hud.write.report import JobReport
from crcr.hud.write.rollups import RollupChange, RollupSums
from crcr.hud.write.statements import (
    COMMIT_KEY,
    JOB_COLUMNS,
    RollupTable,
    WriteStatements,
    update_job_setting,
    write_statements,
)

_INSERT_RACE_RETRIES = 3
_commit_key = operator.itemgetter(*COMMIT_KEY)
_job_values = operator.itemgetter(*JOB_COLUMNS)
# The level rollups purged by day with the rest (the level history is kept).
LEVEL_TABLES = (LEVEL_DAILY, LEVEL_JOBS, LEVEL_RUNS, LEVEL_E2E_BUCKETS)


def write_report(
    engine: Engine,
    report: JobReport,
    now: datetime | None = None,
    *,
    locked: bool = False,
    connection: Connection | None = None,
) -> str:
    """Store one report; returns "created", "updated" or "unchanged"."""
    reports = [(report, now or datetime.now(UTC))]
    return _write_with_retries(engine, reports, locked=locked, connection=connection)[0]


def write_reports(
    engine: Engine,
    reports: Sequence[tuple[JobReport, datetime]],
    *,
    locked: bool = False,
    connection: Connection | None = None,
) -> list[str | Exception]:
    """Store several reports in one transaction; each gets its outcome or its exception.

    One commit for many callbacks is what keeps the in-process HUD off the callback's
    critical path under load. If the batch fails, each report is written on its own, so
    one bad report fails alone. `locked`: the caller holds the SQLite writers' lock;
    `connection`: the caller's own (`db.held_writer`), rather than one from the pool.
    """
    if len(reports) > 1:
        try:
            return list(_write_with_retries(engine, reports, locked=locked, connection=connection))
        except Exception:  # noqa: S110 - retried one by one just below
            pass
    results: list[str | Exception] = []
    for report, now in reports:
        try:
            results.append(write_report(engine, report, now, locked=locked, connection=connection))
        except Exception as exc:
            results.append(exc)
    return results


def _write_with_retries(
    engine: Engine,
    reports: Sequence[tuple[JobReport, datetime]],
    *,
    locked: bool,
    connection: Connection | None,
) -> list[str]:
    for attempt in range(_INSERT_RACE_RETRIES):
        try:
            with write_transaction(engine, locked=locked, connection=connection) as written:
                return _write_batch(written, reports)
        except IntegrityError:
            # Two first callbacks of one job raced on PostgreSQL; the loser retries and
            # finds the winner's row to update.
            if attempt == _INSERT_RACE_RETRIES - 1:
                raise
    raise AssertionError("unreachable")


def _write_batch(
    connection: Connection, reports: Sequence[tuple[JobReport, datetime]]
) -> list[str]:
    """Merge the reports into their rows in memory, then write with one statement per kind.

    Rows are read with one query (locked on PostgreSQL, in job-key order so concurrent
    instances lock in the same order) and written with one executemany for inserts and
    one for updates; rollups, commits and backends get their summed changes the same
    way. Statements per report rather than per kind would be most of the HUD's CPU.
    """
    sql = write_statements(connection.dialect.name)
    keys = sorted({report.job_key for report, _ in reports})
    stored = {row["job_key"]: row for row in _stored_rows(connection, sql, keys)}
    rows: dict[str, dict[str, Any]] = dict(stored)
    sums = RollupSums()
    commits = _CommitChanges(connection, sql)
    backends: dict[str, dict[str, Any]] = {}
    outcomes: list[str] = []
    written: list[Write] = []
    for report, now in reports:
        old = rows.get(report.job_key)
        row = merged_row(old, report, now)
        if old is not None and same_values(old, row):
            outcomes.append("unchanged")
            continue
        outcomes.append("created" if old is None else "updated")
        rows[report.job_key] = row
        if old is not None:
            sums.add_row(old, -1)
        sums.add_row(row, 1)
        commits.track(old, row)
        _touch(backends, row, now)
        written.append((old, row, now))
    fresh = [rows[key] for key in keys if key in rows and key not in stored]
    if fresh:
        execute_many(connection, sql.insert_job, fresh)
    by_columns: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for key in keys:
        if key in stored and rows[key] is not stored[key]:
            new, old_row = rows[key], stored[key]
            names = tuple(compress(JOB_COLUMNS, map(ne, _job_values(new), _job_values(old_row))))
            if not names:  # changed, then changed back, within this batch
                continue
            by_columns.setdefault(names, []).append(
                {"row_id": old_row["id"], **{f"v_{n}": new[n] for n in names}}
            )
    for names, params in by_columns.items():
        execute_many(connection, update_job_setting(names), params)
    if written:
        record_levels(connection, written)
    apply_rollup_change(connection, sums.change())
    commits.finish()
    if backends:
        execute_many(connection, sql.touch_backend, list(backends.values()))
    return outcomes


def _stored_rows(
    connection: Connection, sql: WriteStatements, keys: list[str]
) -> list[dict[str, Any]]:
    """The stored rows of `keys`: locked in key order on PostgreSQL, through driver SQL on SQLite.

    SQLite takes the keys as one JSON array, so its statement is compiled once rather
    than once per batch size, and its rows skip SQLAlchemy's per-value result processing
    (docs/benchmarks.md, "Session 3 changes", has what that saves).
    """
    if connection.dialect.name == "postgresql":
        result = connection.execute(sql.select_jobs_for_update, {"job_keys": keys})
        return [dict(row) for row in result.mappings()]
    return fetch_rows(connection, sql.select_jobs, {"job_keys": json_array(keys)})


def _touch(backends: dict[str, dict[str, Any]], row: Mapping[str, Any], now: datetime) -> None:
    """Fold one write into its backend's entry as successive upserts would leave it."""
    entry = backends.get(row["downstream_repo"])
    if entry is None:
        backends[row["downstream_repo"]] = {
            "repo": row["downstream_repo"],
            "level": row["downstream_repo_level"],
            "first_seen_at": now,
            "last_run_at": now,
        }
        return
    if row["downstream_repo_level"] is not None:
        entry["level"] = row["downstream_repo_level"]
    entry["last_run_at"] = max(entry["last_run_at"], now)


class _CommitChanges:
    """Each row's commit entry changes, summed per commit and written in one statement.

    A row moving to another commit empties an entry, which is deleted at once; what
    was summed so far is written first, so every commit sees its changes in order.
    An entry a row left, or whose row's activity went back (a clock stepping back),
    gets its latest activity recomputed from its rows once they are written: a running
    maximum cannot go down.
    """

    def __init__(self, connection: Connection, sql: WriteStatements) -> None:
        self._connection = connection
        self._sql = sql
        self._pending: dict[tuple[Any, ...], dict[str, Any]] = {}
        self._stale: dict[tuple[Any, ...], dict[str, Any]] = {}

    def track(self, old: Mapping[str, Any] | None, row: Mapping[str, Any]) -> None:
        key = _commit_key(row)
        if old is None:
            self._add(row, 1)
        elif (left := _commit_key(old)) != key:
            self._stale[left] = {f"k_{name}": old[name] for name in COMMIT_KEY}
            self.flush()
            self._connection.execute(self._sql.add_commit, _commit(old, -1))
            self._connection.execute(
                self._sql.drop_empty_commit, {name: old[name] for name in COMMIT_KEY}
            )
            self._add(row, 1)
        elif (old["activity_at"], old["event_type"]) != (row["activity_at"], row["event_type"]):
            self._add(row, 0)
            if row["activity_at"] < old["activity_at"]:
                self._stale[key] = {f"k_{name}": row[name] for name in COMMIT_KEY}

    def _add(self, row: Mapping[str, Any], jobs: int) -> None:
        key = _commit_key(row)
        entry = self._pending.get(key)
        if entry is None:
            self._pending[key] = _commit(row, jobs)
            return
        entry["jobs"] += jobs
        entry["event_type"] = row["event_type"]
        entry["last_activity_at"] = max(entry["last_activity_at"], row["activity_at"])

    def flush(self) -> None:
        if self._pending:
            execute_many(self._connection, self._sql.add_commit, list(self._pending.values()))
            self._pending = {}

    def finish(self) -> None:
        """Write what is pending, then recompute the entries a maximum cannot describe."""
        self.flush()
        if self._stale:
            self._connection.execute(self._sql.refresh_commit_activity, list(self._stale.values()))
            self._stale = {}


def _commit(values: Mapping[str, Any], jobs: int) -> dict[str, Any]:
    return {
        "downstream_repo": values["downstream_repo"],
        "pr_number": values["pr_number"],
        "head_sha": values["head_sha"],
        "event_type": values["event_type"],
        "jobs": jobs,
        "last_activity_at": values["activity_at"],
    }


def _add_counts(
    connection: Connection, table: RollupTable, deltas: Mapping[tuple[Any, ...], Mapping[str, int]]
) -> None:
    """Add each key's deltas to its rollup row, creating it; drop rows left counting nothing."""
    if not deltas:
        return
    execute_many(connection, table.add, [table.params(key, d) for key, d in deltas.items()])
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
    _add_counts(connection, sql.buckets, {key: {"count": n} for key, n in change.buckets.items()})


def purge_older_than(engine: Engine, cutoff: date) -> int:
    """Delete job rows and rollups of days before `cutoff`; returns the job rows deleted.

    Whole days go at once, so rollups of the days kept still match their rows. A commit
    with rows on both sides of the cutoff keeps its entry with its job count as written.
    """
    with write_transaction(engine) as connection:
        deleted = connection.execute(delete(JOBS).where(JOBS.c.day < cutoff)).rowcount
        for table in (DAILY, BUCKETS, *LEVEL_TABLES):
            connection.execute(delete(table).where(table.c.day < cutoff))
        midnight = datetime.combine(cutoff, time.min, tzinfo=UTC)
        connection.execute(delete(COMMITS).where(COMMITS.c.last_activity_at < midnight))
    return int(deleted or 0)

"""The write path's SQL, built once per dialect and reused with bound parameters.

Building an upsert per call costs more than executing it (SQLAlchemy's statement
construction and cache-key generation outweigh SQLite's own work), so each
statement is made once and every call only binds values. Rollup upserts always carry every
counter column (zero for those a change does not touch) so one statement fits all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from sqlalchemy import Table, and_, bindparam, case, delete, func, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite

from crcr.hud.models import BACKENDS, BUCKETS, COMMITS, DAILY, JOBS

COMMIT_KEY = ("downstream_repo", "pr_number", "head_sha")

DAILY_KEY = ("downstream_repo", "day", "event_type")
BUCKETS_KEY = ("downstream_repo", "day", "metric", "bucket")
DAILY_COUNTERS = tuple(c.name for c in DAILY.columns if c.name not in DAILY_KEY)
JOB_COLUMNS = tuple(c.name for c in JOBS.columns if c.name != "id")


@dataclass(frozen=True)
class RollupTable:
    """A rollup table's upsert-and-add and its delete-when-empty statements."""

    key: tuple[str, ...]
    counters: tuple[str, ...]
    add: Any
    drop_empty: Any

    def params(self, key: tuple[Any, ...], deltas: Mapping[str, int]) -> dict[str, Any]:
        """The `add` statement's values: the key's, each counter's delta (0 if none)."""
        values = dict.fromkeys(self.counters, 0)
        values.update(deltas)
        values.update(zip(self.key, key, strict=True))
        return values


@dataclass(frozen=True)
class WriteStatements:
    """Every statement one job write may run, for one dialect."""

    select_jobs: Any  # SQLite: the keys as one JSON array (`fetch_rows`)
    select_jobs_for_update: Any  # PostgreSQL: the keys as an expanding list
    insert_job: Any
    daily: RollupTable
    buckets: RollupTable
    touch_backend: Any
    add_commit: Any
    drop_empty_commit: Any
    refresh_commit_activity: Any


def dialect_insert(dialect: str, table: Table) -> Any:
    """An insert that can take `on_conflict_do_update` on `dialect`."""
    return (postgresql.insert if dialect == "postgresql" else sqlite.insert)(table)


def rollup_table(
    dialect: str, table: Table, key: tuple[str, ...], counters: tuple[str, ...]
) -> RollupTable:
    """The statements of a rollup table keyed by `key` whose `counters` add up."""
    statement = dialect_insert(dialect, table)
    add = statement.on_conflict_do_update(
        index_elements=list(key),
        set_={name: table.c[name] + statement.excluded[name] for name in counters},
    )
    size = "count" if "count" in counters else "jobs"
    drop_empty = delete(table).where(
        and_(*(table.c[name] == bindparam(name) for name in key), table.c[size] <= 0)
    )
    return RollupTable(key=key, counters=counters, add=add, drop_empty=drop_empty)


def _touch_backend(dialect: str) -> Any:
    statement = dialect_insert(dialect, BACKENDS)
    excluded = statement.excluded
    return statement.on_conflict_do_update(
        index_elements=["repo"],
        set_={
            "level": case((excluded.level.is_(None), BACKENDS.c.level), else_=excluded.level),
            "last_run_at": case(
                (excluded.last_run_at > BACKENDS.c.last_run_at, excluded.last_run_at),
                else_=BACKENDS.c.last_run_at,
            ),
        },
    )


def _add_commit(dialect: str) -> Any:
    statement = dialect_insert(dialect, COMMITS)
    excluded = statement.excluded
    return statement.on_conflict_do_update(
        index_elements=list(COMMIT_KEY),
        set_={
            "jobs": COMMITS.c.jobs + excluded.jobs,
            "event_type": excluded.event_type,
            "last_activity_at": case(
                (excluded.last_activity_at > COMMITS.c.last_activity_at, excluded.last_activity_at),
                else_=COMMITS.c.last_activity_at,
            ),
        },
    )


@cache
def write_statements(dialect: str) -> WriteStatements:
    """The statements for `dialect` ("sqlite" or "postgresql"), built on first use."""
    keys = func.json_each(bindparam("job_keys")).table_valued("value")
    return WriteStatements(
        select_jobs=select(JOBS).where(JOBS.c.job_key.in_(select(keys.c.value))),
        # In key order, so that concurrent writers lock rows in the same order.
        select_jobs_for_update=select(JOBS)
        .where(JOBS.c.job_key.in_(bindparam("job_keys", expanding=True)))
        .order_by(JOBS.c.job_key)
        .with_for_update(),
        insert_job=insert(JOBS).values({name: bindparam(name) for name in JOB_COLUMNS}),
        daily=rollup_table(dialect, DAILY, DAILY_KEY, DAILY_COUNTERS),
        buckets=rollup_table(dialect, BUCKETS, BUCKETS_KEY, ("count",)),
        touch_backend=_touch_backend(dialect),
        add_commit=_add_commit(dialect),
        drop_empty_commit=delete(COMMITS).where(
            and_(*(COMMITS.c[name] == bindparam(name) for name in COMMIT_KEY), COMMITS.c.jobs <= 0)
        ),
        refresh_commit_activity=update(COMMITS)
        .where(*(COMMITS.c[name] == bindparam(f"k_{name}") for name in COMMIT_KEY))
        .values(
            last_activity_at=select(func.max(JOBS.c.activity_at))
            .where(*(JOBS.c[name] == bindparam(f"k_{name}") for name in COMMIT_KEY))
            .scalar_subquery()
        ),
    )


@cache
def update_job_setting(names: tuple[str, ...]) -> Any:
    """An update of a job row that sets only the columns `names`, with `v_<name>` values.

    Setting every column makes SQLite rewrite the row's entry in each of its five
    indexes, changed or not (docs/benchmarks.md has the WAL pages that costs).
    """
    return (
        update(JOBS)
        .where(JOBS.c.id == bindparam("row_id"))
        .values({name: bindparam(f"v_{name}") for name in names})
    )

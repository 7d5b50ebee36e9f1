"""The level rollups' SQL, built once per dialect and reused with bound parameters.

Each statement takes one key's values (no expanding `IN` lists), so that the write path
runs them through `crcr.hud.write.driver_sql`, compiled once, like the job write's own.
The selects read a whole batch's keys at once, given as one JSON array (`keys`): a
select per key cost more in the driver's and SQLAlchemy's per-call work than in the
database's (three per pull_request job completed), and on PostgreSQL a round trip each.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from sqlalchemy import (
    Select,
    String,
    and_,
    bindparam,
    case,
    cast,
    delete,
    func,
    literal_column,
    select,
    tuple_,
)
from sqlalchemy.dialects.postgresql import JSONB

from crcr.hud.models import (
    JOBS,
    LEVEL_DAILY,
    LEVEL_E2E_BUCKETS,
    LEVEL_HISTORY,
    LEVEL_JOBS,
    LEVEL_RUNS,
    fixed,
)
from crcr.hud.write.level_counted import LEVEL_COUNTERS
from crcr.hud.write.statements import RollupTable, dialect_insert, rollup_table

COUNTED_KEY = ("downstream_repo", "run_id", "job_name")
RUN_KEY = ("downstream_repo", "run_id")


@dataclass(frozen=True)
class LevelStatements:
    """Every statement the level rollups' write path may run, for one dialect."""

    select_counted: Any
    """Selects (`select_counted`, `select_runs`, `run_facts`) take the batch's `keys`."""
    upsert_counted: Any
    delete_counted: Any
    latest_counting_row: Any
    daily: RollupTable
    run_facts: Any
    select_runs: Any
    upsert_run: Any
    e2e_buckets: RollupTable
    delete_run: Any
    touch_history: Any


def _upsert(dialect: str, table: Any, key: tuple[str, ...]) -> Any:
    statement = dialect_insert(dialect, table)
    return statement.on_conflict_do_update(
        index_elements=list(key),
        set_={c.name: statement.excluded[c.name] for c in table.columns if c.name not in key},
    )


def _matching(table: Any, key: tuple[str, ...]) -> Any:
    return and_(*(table.c[name] == bindparam(name) for name in key))


def _touch_history(dialect: str) -> Any:
    statement = dialect_insert(dialect, LEVEL_HISTORY)
    excluded = statement.excluded
    return statement.on_conflict_do_update(
        index_elements=["repo", "level"],
        set_={
            "first_seen_at": case(
                (excluded.first_seen_at < LEVEL_HISTORY.c.first_seen_at, excluded.first_seen_at),
                else_=LEVEL_HISTORY.c.first_seen_at,
            ),
            "last_seen_at": case(
                (excluded.last_seen_at > LEVEL_HISTORY.c.last_seen_at, excluded.last_seen_at),
                else_=LEVEL_HISTORY.c.last_seen_at,
            ),
        },
    )


def _in_keys(dialect: str, table: Any, key: tuple[str, ...]) -> Any:
    """`key`'s columns among the batch's keys, a JSON array of arrays
    (`driver_sql.json_array`): SQLite's JSON1 or PostgreSQL's jsonb reads it."""
    positions = range(len(key))
    parts: list[Any]
    if dialect == "sqlite":
        keys = func.json_each(bindparam("keys")).table_valued("value")
        parts = [func.json_extract(keys.c.value, literal_column(f"'$[{i}]'")) for i in positions]
    else:
        array = cast(bindparam("keys", type_=String), JSONB)
        keys = func.jsonb_array_elements(array).table_valued("value")
        parts = [keys.c.value.op("->>")(literal_column(str(i))) for i in positions]
    return tuple_(*(table.c[name] for name in key)).in_(select(*parts))


def run_facts() -> Select[Any]:
    """Per run, over its counted jobs: first start, last completion, least queue, last day."""
    jobs = LEVEL_JOBS.c
    return select(
        jobs.downstream_repo,
        jobs.run_id,
        func.min(jobs.started_at).label("first_start"),
        func.max(jobs.completed_at).label("last_completion"),
        func.min(jobs.queue_ms).label("queue_ms"),
        func.max(jobs.day).label("day"),
    ).group_by(jobs.downstream_repo, jobs.run_id)


@cache
def level_statements(dialect: str) -> LevelStatements:
    """The statements for `dialect` ("sqlite" or "postgresql"), built on first use."""
    return LevelStatements(
        select_counted=select(LEVEL_JOBS).where(_in_keys(dialect, LEVEL_JOBS, COUNTED_KEY)),
        upsert_counted=_upsert(dialect, LEVEL_JOBS, COUNTED_KEY),
        delete_counted=delete(LEVEL_JOBS).where(_matching(LEVEL_JOBS, COUNTED_KEY)),
        # Through the (repo, head_sha) index: every attempt of a run tests one commit.
        latest_counting_row=select(JOBS)
        .where(
            _matching(JOBS, ("downstream_repo", "head_sha", "run_id", "job_name")),
            JOBS.c.status == fixed("completed"),
            JOBS.c.event_type == fixed("pull_request"),
            JOBS.c.superseded_by.is_(None),
        )
        .order_by(JOBS.c.run_attempt.desc(), JOBS.c.job_key.desc())
        .limit(1),
        daily=rollup_table(dialect, LEVEL_DAILY, ("downstream_repo", "day"), LEVEL_COUNTERS),
        run_facts=run_facts().where(_in_keys(dialect, LEVEL_JOBS, RUN_KEY)),
        select_runs=select(LEVEL_RUNS).where(_in_keys(dialect, LEVEL_RUNS, RUN_KEY)),
        upsert_run=_upsert(dialect, LEVEL_RUNS, RUN_KEY),
        e2e_buckets=rollup_table(
            dialect, LEVEL_E2E_BUCKETS, ("downstream_repo", "day", "bucket"), ("count",)
        ),
        delete_run=delete(LEVEL_RUNS).where(_matching(LEVEL_RUNS, RUN_KEY)),
        touch_history=_touch_history(dialect),
    )

"""The level rollups' SQL, built once per dialect and reused with bound parameters.

Each statement takes one key's values (no expanding `IN` lists), so that the write path
runs them through `crcr.hud.write.driver_sql`, compiled once, like the job write's own.
On SQLite the per-key selects also come as one statement for a whole batch's keys, given
as one JSON array (`keys`), as the job write reads its rows (`*_many`, None elsewhere).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from sqlalchemy import (
    Select,
    and_,
    bindparam,
    case,
    delete,
    func,
    literal_column,
    select,
    tuple_,
)

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
    upsert_counted: Any
    delete_counted: Any
    latest_counting_row: Any
    daily: RollupTable
    run_facts: Any
    select_run: Any
    upsert_run: Any
    e2e_buckets: RollupTable
    delete_run: Any
    touch_history: Any
    select_counted_many: Any = None
    select_runs_many: Any = None
    run_facts_many: Any = None


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


def _in_keys(table: Any, key: tuple[str, ...]) -> Any:
    """`key`'s columns among the batch's keys, a JSON array of arrays (SQLite's JSON1)."""
    keys = func.json_each(bindparam("keys")).table_valued("value")
    parts = (func.json_extract(keys.c.value, literal_column(f"'$[{i}]'")) for i in range(len(key)))
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
        select_counted=select(LEVEL_JOBS).where(_matching(LEVEL_JOBS, COUNTED_KEY)),
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
        run_facts=run_facts().where(_matching(LEVEL_JOBS, RUN_KEY)),
        select_run=select(LEVEL_RUNS).where(_matching(LEVEL_RUNS, RUN_KEY)),
        upsert_run=_upsert(dialect, LEVEL_RUNS, RUN_KEY),
        e2e_buckets=rollup_table(
            dialect, LEVEL_E2E_BUCKETS, ("downstream_repo", "day", "bucket"), ("count",)
        ),
        delete_run=delete(LEVEL_RUNS).where(_matching(LEVEL_RUNS, RUN_KEY)),
        touch_history=_touch_history(dialect),
        **(_sqlite_many() if dialect == "sqlite" else {}),
    )


def _sqlite_many() -> dict[str, Any]:
    return {
        "select_counted_many": select(LEVEL_JOBS).where(_in_keys(LEVEL_JOBS, COUNTED_KEY)),
        "select_runs_many": select(LEVEL_RUNS).where(_in_keys(LEVEL_RUNS, RUN_KEY)),
        "run_facts_many": run_facts().where(_in_keys(LEVEL_JOBS, RUN_KEY)),
    }

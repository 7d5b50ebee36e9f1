"""`hud_jobs`' partial indexes, on SQLite and PostgreSQL: the migrations give them the
models' conditions, every read that needs one can use it, and the rows it leaves out
(pull-request jobs still running) are not what those reads look for."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, event, inspect, text
from tests.hud.levels.level_jobs import NOW, REPO, pr_job, write

from crcr.hud.baseline.reader import latest_push_result, latest_push_results
from crcr.hud.db import migrate
from crcr.hud.health.rows import nightly_runs, recent_completed_jobs
from crcr.hud.levels.noise import noise_rates
from crcr.hud.models import JOBS
from crcr.hud.reads.culprits import push_results
from crcr.hud.reads.periodic import read_periodic

PARTIAL = {ix.name for ix in JOBS.indexes if ix.dialect_options["sqlite"]["where"] is not None}


BOUND_CONDITION_COLUMN = re.compile(r"hud_jobs\.(event_type|status) (=|!=|<>|IN \() ?(\?|%\()")
"""A comparison of a column the partial indexes' conditions name with a bound parameter."""


def _condition(where: Any) -> str:
    """An index condition as either database spells it back, without casts and brackets."""
    spelt = re.sub(r"::(text|character varying)", "", str(where).lower())
    return re.sub(r"[\s()]", "", spelt)


def test_the_migrated_indexes_have_the_models_columns_and_conditions(
    migrated_engine: Engine,
) -> None:
    stored = {ix["name"]: ix for ix in inspect(migrated_engine).get_indexes("hud_jobs")}
    where = f"{migrated_engine.dialect.name}_where"

    for index in JOBS.indexes:
        found = stored[str(index.name)]
        assert found["column_names"] == [column.name for column in index.columns]
        expected = index.dialect_options[migrated_engine.dialect.name]["where"]
        condition = found.get("dialect_options", {}).get(where)
        assert (condition is None) == (expected is None), index.name
        if expected is not None:
            assert _condition(condition) == _condition(expected)
    assert set(PARTIAL) == {"ix_hud_jobs_repo_event_activity", "ix_hud_jobs_baseline"}


def _push_baselines(connection: Connection) -> None:
    job = (REPO, "CI", "test")
    latest_push_result(connection, "pytorch/pytorch", job, NOW)
    # On PostgreSQL, several lookups go in one statement (a lateral seek per key).
    latest_push_results(
        connection, [("pytorch/pytorch", job, NOW), ("pytorch/pytorch", (REPO, "CI", "b"), NOW)]
    )


READS: dict[str, tuple[str, Callable[[Engine], Any]]] = {
    "baseline": ("ix_hud_jobs_baseline", lambda e: _with_connection(e, _push_baselines)),
    "culprits' pushes": ("ix_hud_jobs_repo_event_activity", lambda e: push_results(e, REPO, 50)),
    "health": ("ix_hud_jobs_repo_event_activity", lambda e: recent_completed_jobs(e, REPO, 3)),
    "a pull_request badge": (
        "ix_hud_jobs_repo_event_activity",
        lambda e: recent_completed_jobs(e, REPO, 3, frozenset({"pull_request"})),
    ),
    "nightly runs": ("ix_hud_jobs_repo_event_activity", lambda e: nightly_runs(e, REPO, 5)),
    "noise floor": (
        "ix_hud_jobs_repo_event_activity",
        lambda e: _with_connection(e, lambda c: noise_rates(c, [REPO], NOW)),
    ),
    "periodic": ("ix_hud_jobs_repo_event_activity", lambda e: read_periodic(e, 7, NOW)),
}


def _with_connection(engine: Engine, read: Callable[[Connection], Any]) -> None:
    with engine.connect() as connection:
        read(connection)


def _statements(engine: Engine, read: Callable[[Engine], Any]) -> list[tuple[str, Any]]:
    """The statements on `hud_jobs` that `read` runs, with their parameters."""
    seen: list[tuple[str, Any]] = []

    def record(_c: Any, _cursor: Any, statement: str, params: Any, *_: Any) -> None:
        if "hud_jobs" in statement and "ORDER BY" in statement.upper():
            seen.append((statement, params))

    event.listen(engine, "before_cursor_execute", record)
    try:
        read(engine)
    finally:
        event.remove(engine, "before_cursor_execute", record)
    return seen


def _plans_with_only(engine: Engine, index: str, statements: list[tuple[str, Any]]) -> list[str]:
    """Each statement's plan with `index` the only index on `hud_jobs` but its unique key's.

    Both databases drop indexes inside a transaction, which is rolled back: a read that
    cannot use the partial index then shows a full scan, whatever the table's size.
    """
    others = [str(ix.name) for ix in JOBS.indexes if ix.name != index]
    plans = []
    with engine.connect() as connection:
        driver = connection.connection.driver_connection
        sqlite = engine.dialect.name == "sqlite"
        cursor = connection.connection.cursor()
        try:
            cursor.execute("BEGIN" if sqlite else "SET LOCAL enable_seqscan = off")
            for name in others:
                cursor.execute(f"DROP INDEX {name}")
            for statement, params in statements:
                cursor.execute(
                    ("EXPLAIN QUERY PLAN " if sqlite else "EXPLAIN ") + statement, params
                )
                plans.append(" / ".join(str(row[-1]) for row in cursor.fetchall()))
        finally:
            cursor.close()
            if sqlite:
                driver.execute("ROLLBACK")
            else:
                driver.rollback()
    return plans


@pytest.mark.parametrize("read", list(READS))
def test_every_read_that_needs_a_partial_index_can_use_it(engine: Engine, read: str) -> None:
    index, run = READS[read]
    nightly = [pr_job(f"n-{n}", event_type=event) for n, event in enumerate(("nightly",) * 2)]
    write(engine, [pr_job(1), pr_job(2, event_type="push"), *nightly])

    statements = _statements(engine, run)

    assert statements, f"{read} read nothing from hud_jobs"
    for plan in _plans_with_only(engine, index, statements):
        assert index in plan, plan
    # Bound, SQLite would still use the index, but plan the statement again each run.
    for statement, _ in statements:
        assert not BOUND_CONDITION_COLUMN.search(statement), statement


def test_a_pull_request_job_enters_the_activity_reads_as_it_completes(engine: Engine) -> None:
    pull_request = frozenset({"pull_request"})
    write(engine, [pr_job("pr", conclusion=None), pr_job("push", event_type="push")])
    assert recent_completed_jobs(engine, REPO, 3, pull_request) == []

    write(engine, [pr_job("pr", conclusion="failure")], now=NOW + timedelta(minutes=5))

    [job] = recent_completed_jobs(engine, REPO, 3, pull_request)
    assert (job.event_type, job.conclusion) == ("pull_request", "failure")
    assert [j.event_type for j in recent_completed_jobs(engine, REPO, 3)] == ["push"]


@pytest.fixture
def upgraded_engine(engine: Engine) -> Iterator[Engine]:
    """The shared store, left at the newest migration whatever the test did."""
    yield engine
    migrate(engine)


def _downgrade(engine: Engine, revision: str) -> None:
    config = Config()
    config.set_main_option("script_location", "crcr.hud:migrations")
    with engine.connect() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, revision)
        connection.commit()


def test_downgrading_past_0008_rebuilds_the_pr_rollup_from_the_rows(
    upgraded_engine: Engine,
) -> None:
    engine = upgraded_engine
    write(engine, [pr_job(1), pr_job(1, "b"), pr_job(2, event_type="push")])
    write(engine, [pr_job(3)], now=NOW - timedelta(days=1))

    _downgrade(engine, "0007")

    with engine.connect() as connection:
        rows = connection.execute(
            text("SELECT day, event_type, pr_number, jobs FROM hud_rollup_prs")
        ).all()
    today, yesterday = str(NOW.date()), str((NOW - timedelta(days=1)).date())
    assert sorted((str(day)[:10], event, pr, jobs) for day, event, pr, jobs in rows) == [
        (yesterday, "pull_request", 101, 1),
        (today, "pull_request", 101, 2),
        (today, "push", 101, 1),
    ]

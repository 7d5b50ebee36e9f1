"""Rows written through driver SQL are stored exactly as SQLAlchemy would store them."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from sqlalchemy import Engine, bindparam, insert, select, text

from crcr.hud.db import write_transaction
from crcr.hud.models import BACKENDS, DAILY
from crcr.hud.write.driver_sql import execute_many, fetch_rows
from crcr.hud.write.statements import write_statements

SEEN = datetime(2026, 3, 1, 12, 30, 0, tzinfo=UTC)  # microsecond 0: stored with .000000
RUN = datetime(2026, 3, 1, 15, 0, 0, 250_000, tzinfo=timezone(timedelta(hours=2)))


def test_datetimes_read_back_as_written_and_stored_alike(engine: Engine) -> None:
    statement = write_statements(engine.dialect.name).touch_backend
    with write_transaction(engine) as connection:
        execute_many(
            connection,
            statement,
            [{"repo": "driver/sql", "level": "L2", "first_seen_at": SEEN, "last_run_at": RUN}],
        )
        connection.execute(
            insert(BACKENDS),
            [{"repo": "orm/sql", "level": "L2", "first_seen_at": SEEN, "last_run_at": RUN}],
        )

    with engine.connect() as connection:
        rows = {
            row.repo: (row.first_seen_at, row.last_run_at)
            for row in connection.execute(select(BACKENDS))
        }
        stored = connection.execute(
            text("SELECT repo, CAST(last_run_at AS TEXT) FROM hud_backends ORDER BY repo")
        ).all()

    assert rows["driver/sql"] == (SEEN, RUN)
    assert rows["driver/sql"] == rows["orm/sql"]
    assert stored[0][1] == stored[1][1]  # the same text on SQLite, the same instant on PG


def test_days_and_counters_are_bound_by_name_in_any_dialect(engine: Engine) -> None:
    table = write_statements(engine.dialect.name).daily
    counters = dict.fromkeys(table.counters, 0)
    key = {"downstream_repo": "driver/sql", "day": date(2026, 3, 1), "event_type": "push"}
    with write_transaction(engine) as connection:
        for jobs in (2, 3):  # the second adds to the first through ON CONFLICT
            execute_many(connection, table.add, [{**key, **counters, "jobs": jobs}])

    with engine.connect() as connection:
        row = connection.execute(select(DAILY.c.day, DAILY.c.jobs)).one()

    assert (row.day, row.jobs) == (date(2026, 3, 1), 5)


def test_a_naive_datetime_is_refused(engine: Engine) -> None:
    statement = write_statements(engine.dialect.name).touch_backend
    naive = {
        "repo": "naive",
        "level": None,
        "first_seen_at": SEEN,
        "last_run_at": datetime(2026, 1, 1),
    }
    with pytest.raises(ValueError, match="naive"), write_transaction(engine) as connection:
        execute_many(connection, statement, [naive])


def test_rows_fetched_through_driver_sql_read_as_sqlalchemy_reads_them(engine: Engine) -> None:
    with write_transaction(engine) as connection:
        connection.execute(
            insert(BACKENDS),
            [{"repo": "read/back", "level": None, "first_seen_at": SEEN, "last_run_at": RUN}],
        )
    by_repo = select(BACKENDS).where(BACKENDS.c.repo == bindparam("repo"))

    with engine.connect() as connection:
        fetched = fetch_rows(connection, by_repo, {"repo": "read/back"})
        expected = [
            dict(row) for row in connection.execute(by_repo, {"repo": "read/back"}).mappings()
        ]

    assert fetched == expected
    assert fetched[0]["last_run_at"] == RUN and fetched[0]["last_run_at"].tzinfo is UTC

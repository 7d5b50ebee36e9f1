"""The write path's statements compiled once to the driver's SQL, run with plain values.

SQLAlchemy turns every parameter set of an `executemany` into the driver's form one value
at a time (bind processors, type decorators, the execution context): on the HUD's write
path that is several times what SQLite spends executing the statements
(docs/benchmarks.md). The statements stay SQLAlchemy constructs, compiled once per dialect; only
the values skip the per-value machinery, on the way in and (for the write path's one
select) on the way out. The two types that need converting are converted here exactly
as SQLAlchemy's dialects store and read them, so rows written or read either way are
the same.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, date, datetime
from functools import lru_cache
from typing import Any

import orjson
from sqlalchemy import Boolean, Connection, Date, DateTime, TypeDecorator
from sqlalchemy.exc import IntegrityError

Convert = Callable[[Any], Any]


def _aware(value: datetime | None) -> datetime | None:
    """A `UtcDateTime` for psycopg: aware, as the type decorator insists."""
    if value is not None and value.tzinfo is None:
        raise ValueError("naive datetime given to a UTC column")
    return value


@lru_cache(maxsize=1024)
def _sqlite_datetime(value: datetime | None) -> str | None:
    """As SQLAlchemy's SQLite DATETIME stores a `UtcDateTime`: naive UTC with microseconds.

    Cached: a write stores the same instant several times (a row's receipt, update and
    activity times, its commit's and its backend's), and formatting is the costly part.
    """
    aware = _aware(value)
    if aware is None:
        return None
    # "YYYY-MM-DD HH:MM:SS.ffffff+00:00" without its offset.
    return aware.astimezone(UTC).isoformat(" ", "microseconds")[:26]


@lru_cache(maxsize=64)
def _sqlite_date(value: date | None) -> str | None:
    """Cached: a batch's rollup keys name the same few days over and over."""
    return None if value is None else value.isoformat()


def _from_sqlite_datetime(value: str | None) -> datetime | None:
    """A stored `UtcDateTime` as SQLAlchemy reads it back: aware, in UTC.

    Stored naive, so parsed with its offset appended: ~5x cheaper than parsing, then
    `replace(tzinfo=UTC)`, and the same value, its zone the same `UTC` object.
    """
    return None if value is None else datetime.fromisoformat(value + "+00:00")


def _from_sqlite_date(value: str | None) -> date | None:
    return None if value is None else date.fromisoformat(value)


def _from_sqlite_boolean(value: int | None) -> bool | None:
    return None if value is None else bool(value)


def _from_aware(value: datetime | None) -> datetime | None:
    return None if value is None else value.astimezone(UTC)


def _result_converter(kind: Any, sqlite: bool) -> Convert | None:
    """How a column of type `kind` reads back, where the driver's value is not it already."""
    if isinstance(kind, TypeDecorator):
        kind = kind.impl
    if isinstance(kind, DateTime):
        return _from_sqlite_datetime if sqlite else _from_aware
    if isinstance(kind, Date) and sqlite:
        return _from_sqlite_date
    if isinstance(kind, Boolean) and sqlite:
        return _from_sqlite_boolean
    return None


class DriverStatement:
    """One statement in the driver's SQL, with the order and conversion of its parameters."""

    def __init__(self, statement: Any, connection: Connection) -> None:
        compiled = statement.compile(dialect=connection.dialect)
        self.sql: str = compiled.string
        self._positional: bool = compiled.positional
        names = compiled.positiontup if compiled.positional else list(compiled.binds)
        self._names: tuple[str, ...] = tuple(names)
        sqlite = connection.dialect.name == "sqlite"
        self._converts: list[tuple[int, Convert]] = []
        for position, name in enumerate(self._names):
            kind = compiled.binds[name].type
            if isinstance(kind, TypeDecorator):
                kind = kind.impl
            if isinstance(kind, DateTime):
                self._converts.append((position, _sqlite_datetime if sqlite else _aware))
            elif isinstance(kind, Date) and sqlite:
                self._converts.append((position, _sqlite_date))
            # psycopg takes dates as they are, and nothing else needs converting
        self._values = operator.itemgetter(*self._names)
        columns = getattr(statement, "selected_columns", ())
        self._columns = tuple(column.name for column in columns)
        self._reads = [
            (position, convert)
            for position, column in enumerate(columns)
            if (convert := _result_converter(column.type, sqlite)) is not None
        ]

    def fetch_rows(self, connection: Connection, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Run the select once: its rows by column name, with values as SQLAlchemy reads them."""
        values = [params[name] for name in self._names]
        cursor = connection.connection.cursor()
        try:
            cursor.execute(
                self.sql,
                values if self._positional else dict(zip(self._names, values, strict=True)),
            )
            fetched = cursor.fetchall()
        finally:
            cursor.close()
        rows = []
        for raw in fetched:
            row = list(raw)
            for position, convert in self._reads:
                row[position] = convert(row[position])
            rows.append(dict(zip(self._columns, row, strict=True)))
        return rows

    def execute_many(self, connection: Connection, rows: Sequence[Mapping[str, Any]]) -> None:
        """Run the statement once per row (one `executemany`); rows are keyed by bind name."""
        params: list[Any] = []
        get, converts, single = self._values, self._converts, len(self._names) == 1
        for row in rows:
            values = [get(row)] if single else get(row)
            if converts:
                values = list(values)
                for position, convert in converts:
                    values[position] = convert(values[position])
            params.append(
                values if self._positional else dict(zip(self._names, values, strict=True))
            )
        # The DBAPI cursor itself: `exec_driver_sql` would still build an execution
        # context per call (~25 µs, as much as SQLite's own work for a batch of eight).
        driver = connection.dialect.loaded_dbapi
        cursor = connection.connection.cursor()
        try:
            cursor.executemany(self.sql, params)
        except driver.IntegrityError as exc:  # what the writer's insert-race retry expects
            raise IntegrityError(self.sql, params, exc) from exc
        finally:
            cursor.close()


_COMPILED: dict[tuple[int, str], tuple[Any, DriverStatement]] = {}


def _compiled(connection: Connection, statement: Any) -> DriverStatement:
    """`statement` in the driver's SQL, compiled on first use per dialect and kept.

    For the long-lived statements of `crcr.hud.write.statements` (kept with the statement, so
    its id stays its own).
    """
    key = (id(statement), connection.dialect.name)
    entry = _COMPILED.get(key)
    if entry is None:
        entry = _COMPILED[key] = (statement, DriverStatement(statement, connection))
    return entry[1]


def json_array(values: Sequence[Any]) -> str:
    """`values` as a JSON array, the one parameter of a select over a batch's keys (SQLite).

    orjson: the standard library's `json.dumps` took ~10 µs for a batch's keys, 15 times
    as long, and the write path makes four such arrays per batch.
    """
    return orjson.dumps(values).decode()


def execute_many(connection: Connection, statement: Any, rows: Sequence[Mapping[str, Any]]) -> None:
    """`connection.execute(statement, rows)` without SQLAlchemy's per-value work."""
    _compiled(connection, statement).execute_many(connection, rows)


def fetch_rows(
    connection: Connection, statement: Any, params: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """`connection.execute(select, params).mappings()` as plain dicts, without its per-value work.

    Not for expanding parameters (an `IN` list): their SQL depends on the list's length.
    """
    return _compiled(connection, statement).fetch_rows(connection, params)

"""Connections to the results store: embedded SQLite (WAL) or PostgreSQL through psycopg 3.

Migrations are Alembic scripts shipped in the package and applied programmatically, so a
fresh deployment needs no `alembic.ini`: `open_hud` and `crcr hud migrate` both call
`migrate`.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, make_url, text
from sqlalchemy.exc import DBAPIError

from crcr.config.private_files import private_file
from crcr.config.settings import SettingsError, mask_url
from crcr.stores.schema import SchemaTooNew
from crcr.stores.sqlite.write_lock import SqliteWriteLock

# Arbitrary constant: the PostgreSQL advisory lock that serialises concurrent migrations
# when several instances start at once.
_MIGRATION_LOCK_ID = 0x637263725F687564  # "crcr_hud"
_IMMEDIATE = "crcr_sqlite_immediate"
_SQLITE_WRITE_LOCKS: weakref.WeakKeyDictionary[Engine, SqliteWriteLock] = (
    weakref.WeakKeyDictionary()
)


def normalise_url(url: str) -> str:
    """Route plain `postgresql://` (and `postgres://`) URLs to the psycopg 3 driver."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url.removeprefix(prefix)
    return url


def create_results_engine(
    url: str, *, pool_size: int = 10, manual_checkpoints: bool = False
) -> Engine:
    """An engine for the results store; SQLite gets WAL, a busy timeout and its directory.

    `manual_checkpoints` turns off SQLite's automatic WAL checkpoints, for a caller that
    runs `checkpoint_wal` itself off the write path (`HudIngestor` does): an automatic
    one runs inside the commit that crosses 1,000 WAL pages, fsyncs, and held the
    event loop for ~10 ms every hundred batches.
    """
    url = normalise_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        if parsed.get_backend_name() == "postgresql" and find_spec("psycopg") is None:
            # An extra, so that the embedded (SQLite) install stays small.
            raise SettingsError(
                "CRCR_DATABASE_URL: PostgreSQL needs its driver: pip install 'crcr[postgres]'"
            )
        return create_engine(url, pool_pre_ping=True, pool_size=pool_size, max_overflow=pool_size)
    if parsed.database and parsed.database != ":memory:":
        private_file(Path(parsed.database).expanduser())
    engine = create_engine(
        url, connect_args={"check_same_thread": False, "timeout": 30}, pool_use_lifo=True
    )
    _configure_sqlite(engine, manual_checkpoints=manual_checkpoints)
    return engine


SYNCHRONOUS = "FULL"
"""SQLite's durability level for the results store (see `_configure_sqlite`)."""


def checkpoint_wal(engine: Engine) -> None:
    """Copy what the SQLite WAL holds into the database file, waiting for nobody (PASSIVE)."""
    with engine.connect() as connection:
        connection.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)")


def _configure_sqlite(engine: Engine, *, manual_checkpoints: bool) -> None:
    """Let SQLAlchemy own transactions and make writers take the lock up front.

    pysqlite's own BEGIN is deferred: two threads that both read then write deadlock into
    SQLITE_BUSY. Writes start with BEGIN IMMEDIATE instead (see `write_transaction`).
    """

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        # FULL: a row the HUD answered 200 for must survive an OS crash (NORMAL in WAL
        # mode may lose the last commits); the cost is in docs/benchmarks.md.
        cursor.execute(f"PRAGMA synchronous={SYNCHRONOUS}")
        cursor.execute("PRAGMA busy_timeout=30000")
        if manual_checkpoints:
            cursor.execute("PRAGMA wal_autocheckpoint=0")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        immediate = connection.get_execution_options().get(_IMMEDIATE, False)
        statement = "BEGIN IMMEDIATE" if immediate else "BEGIN"
        # On the driver's connection: `exec_driver_sql` would build an execution context
        # (~12 µs, a third of an empty transaction's CPU) for a statement with no result.
        # Its failure (SQLITE_BUSY past the timeout) still raises SQLAlchemy's error.
        driver = connection.dialect.loaded_dbapi
        try:
            connection.connection.driver_connection.execute(statement)  # type: ignore[union-attr]
        except driver.Error as exc:
            raise DBAPIError.instance(statement, None, exc, driver.Error) from exc


@contextmanager
def write_transaction(
    engine: Engine, *, locked: bool = False, connection: Connection | None = None
) -> Iterator[Connection]:
    """A connection inside a write transaction, committed on success.

    SQLite admits one writer at a time and its busy handler waits by sleeping and polling,
    so writers of every process sharing the file queue on `sqlite_writer_lock` instead;
    `locked` says the caller holds it already. `connection` is a writer's own
    (`held_writer`), used instead of one from the pool.
    """
    sqlite = engine.dialect.name == "sqlite"
    turn = nullcontext() if locked or not sqlite else sqlite_writer_lock(engine).held()
    if connection is not None:
        with turn, connection.begin():
            yield connection
        return
    if not sqlite:
        with engine.begin() as connection:
            yield connection
        return
    with turn, engine.connect() as connection:
        connection = connection.execution_options(**{_IMMEDIATE: True})
        with connection.begin():
            yield connection


def held_writer(engine: Engine) -> Connection:
    """A connection for one writer to keep across its transactions (`write_transaction`).

    The pool's checkout and return around each transaction (its reset, SQLAlchemy's
    events and objects) cost ~150 µs of CPU per transaction in the HUD's write path
    (docs/benchmarks.md, branch hudwrite), about as much as SQLite's commit. On SQLite its
    transactions begin IMMEDIATE, as `write_transaction`'s do. The holder closes it.
    """
    connection = engine.connect()
    if engine.dialect.name == "sqlite":
        connection = connection.execution_options(**{_IMMEDIATE: True})
    return connection


def sqlite_writer_lock(engine: Engine) -> SqliteWriteLock:
    """The lock every writer of this engine's SQLite file takes (see `write_transaction`)."""
    lock = _SQLITE_WRITE_LOCKS.get(engine)
    if lock is None:
        database = engine.url.database or ":memory:"
        lock = SqliteWriteLock(None if database == ":memory:" else Path(database).expanduser())
        lock = _SQLITE_WRITE_LOCKS.setdefault(engine, lock)
    return lock


def refuse_unknown_revisions(config: Any, connection: Connection) -> None:
    """Raise `SchemaTooNew` when the store is at a revision this crcr does not ship.

    Only a newer crcr writes one; Alembic would stop on it with a traceback instead.
    """
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    scripts = ScriptDirectory.from_config(config)
    known = {script.revision for script in scripts.walk_revisions()}
    found = MigrationContext.configure(connection).get_current_heads()
    unknown = [revision for revision in found if revision not in known]
    if unknown:
        store = f"results store {mask_url(connection.engine.url.render_as_string(False))}"
        raise SchemaTooNew(store, ", ".join(unknown), scripts.get_current_head())


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest migration (idempotent, safe across instances).

    A store at a revision this crcr does not know (written by a newer one) is refused
    with `SchemaTooNew`, untouched. Instances starting together (`crcr serve --workers 2`
    on a new data directory) take turns: PostgreSQL through an advisory lock, SQLite
    through the writers' file lock. Without it, two SQLite migrations each read, then
    both try to write, and SQLite fails one at once ("database is locked") rather than
    make it wait.
    """
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", "crcr.hud:migrations")
    sqlite_turn = (
        sqlite_writer_lock(engine).held() if engine.dialect.name == "sqlite" else nullcontext()
    )
    with sqlite_turn, engine.connect() as connection:
        postgres = connection.dialect.name == "postgresql"
        if postgres:
            connection.execute(text("SELECT pg_advisory_lock(:id)"), {"id": _MIGRATION_LOCK_ID})
            connection.commit()
        try:
            refuse_unknown_revisions(config, connection)
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
            connection.commit()
        finally:
            if postgres:
                connection.execute(
                    text("SELECT pg_advisory_unlock(:id)"), {"id": _MIGRATION_LOCK_ID}
                )
                connection.commit()

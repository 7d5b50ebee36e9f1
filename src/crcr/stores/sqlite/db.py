"""SQLite plumbing for the embedded state store: schema, threads, transactions.

Correctness across worker processes sharing the file comes from SQLite's own locking:
every read-modify-write runs in a `BEGIN IMMEDIATE` transaction, which takes the
database's write lock up front; writers queue on `SqliteWriteLock` first so that none
waits in SQLite's sleeping busy handler. Concurrent writes of one process share a
transaction and its commit (`group_commit`). Calls run on a small thread pool (one
connection per thread) to keep the event loop free.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from crcr.stores.schema import SQLITE_STATE_SCHEMA, SchemaTooNew
from crcr.stores.sqlite.group_commit import GroupCommit, Work, run_in_savepoint
from crcr.stores.sqlite.write_lock import SqliteWriteLock
from crcr.stores.values import StateStoreUnavailable

T = TypeVar("T")

# How often one instance sweeps expired rows out of the file (they are ignored anyway).
PURGE_INTERVAL_SECONDS = 60.0

SYNCHRONOUS = "FULL"
"""SQLite's durability level for the state store (see `_connection`)."""

SCHEMA_V1 = """
CREATE TABLE IF NOT EXISTS records (
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    expires_at REAL NOT NULL,
    PRIMARY KEY (kind, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS records_by_expiry ON records (expires_at);

CREATE TABLE IF NOT EXISTS rate_hits (
    key TEXT NOT NULL,
    at REAL NOT NULL,
    expires_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS rate_hits_by_key ON rate_hits (key, at);
CREATE INDEX IF NOT EXISTS rate_hits_by_expiry ON rate_hits (expires_at);

CREATE TABLE IF NOT EXISTS queue_items (
    queue TEXT NOT NULL,
    item_id TEXT NOT NULL,
    payload TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    enqueued_at REAL NOT NULL,
    ready_at REAL NOT NULL,  -- when it may next be leased: ready time or lease expiry
    lease_token TEXT,
    PRIMARY KEY (queue, item_id)
);
CREATE INDEX IF NOT EXISTS queue_items_by_ready ON queue_items (queue, ready_at);

CREATE TABLE IF NOT EXISTS deadlines (
    job_key TEXT PRIMARY KEY,
    deadline REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS deadlines_by_time ON deadlines (deadline);

CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    bucket TEXT NOT NULL,
    at REAL NOT NULL,
    entry TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_by_bucket ON audit (bucket, at);
CREATE INDEX IF NOT EXISTS audit_by_time ON audit (at);
"""

UPGRADES = {1: SCHEMA_V1}
"""The script that brings the file from version N - 1 to version N (`PRAGMA user_version`).

Version 0 is a new file or one written before versions existed: the version 1 script
creates only what is missing, so it serves both. A change of layout adds a step here
and raises `SQLITE_STATE_SCHEMA`; a step runs in the same transaction as its stamp.
"""


def schema_version(conn: sqlite3.Connection) -> int:
    """The layout version stamped on the open file (0: new, or from before versions)."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _purge_expired(conn: sqlite3.Connection, now: float) -> None:
    conn.execute("DELETE FROM records WHERE expires_at <= ?", (now,))
    conn.execute("DELETE FROM rate_hits WHERE expires_at <= ?", (now,))


class SqliteDatabase:
    """One SQLite file reached from a few threads, each with its own connection."""

    def __init__(self, path: Path, *, busy_timeout: float = 5.0, threads: int = 4) -> None:
        self.path = path
        self._busy_timeout = busy_timeout
        self._executor = ThreadPoolExecutor(threads, thread_name_prefix="crcr-sqlite")
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        # Writers queue on a lock rather than in SQLite's busy handler, which sleeps in
        # steps of up to 100 ms.
        self._write_lock = SqliteWriteLock(path)
        self._next_purge = 0.0
        self._group = GroupCommit(self.commit_together)

    def _connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(
                self.path,
                timeout=self._busy_timeout,
                isolation_level=None,  # we issue BEGIN/COMMIT ourselves
                check_same_thread=False,  # only so that close() may close it
            )
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
            # FULL: every commit is an acknowledged promise (a dispatch record, a job
            # transition, a queued retry), and in WAL mode NORMAL may lose the last
            # commits to an OS crash or power loss. Its cost is in docs/benchmarks.md.
            conn.execute(f"PRAGMA synchronous = {SYNCHRONOUS}")
            self._local.conn = conn
            with self._connections_lock:
                self._connections.append(conn)
        return conn

    def _create_schema(self) -> None:
        """Upgrade the file to this crcr's layout (creating it if new), or refuse a newer one.

        Under the writers' lock, so that instances opening the file together take turns.
        """
        conn = self._connection()
        conn.execute("PRAGMA journal_mode = WAL")
        with self._write_lock.held():
            found = schema_version(conn)
            if found > SQLITE_STATE_SCHEMA:
                raise SchemaTooNew(f"SQLite state store {self.path}", found, SQLITE_STATE_SCHEMA)
            for version in range(found + 1, SQLITE_STATE_SCHEMA + 1):
                step = f"{UPGRADES[version]}\nPRAGMA user_version = {version};"
                try:
                    conn.executescript(f"BEGIN IMMEDIATE;\n{step}\nCOMMIT;")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise

    def _transaction(self, works: Sequence[Work]) -> list[object]:
        with self._write_lock.held():
            return self._locked_transaction(
                lambda conn, _now: [run_in_savepoint(conn, work, time.time()) for work in works]
            )

    async def commit_together(self, works: Sequence[Work]) -> list[object]:
        """Run `works` in order in one transaction, each in its own savepoint, and commit:
        their results, an exception one raised as `group_commit.Raised`."""
        return await self._call(lambda: self._transaction(works))

    def _locked_transaction(self, work: Callable[[sqlite3.Connection, float], T]) -> T:
        conn = self._connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            # The clock is read once the write lock is held, so times never go backwards
            # between consecutive transactions on this machine.
            now = time.time()
            result = work(conn, now)
            if time.monotonic() >= self._next_purge:
                self._next_purge = time.monotonic() + PURGE_INTERVAL_SECONDS
                _purge_expired(conn, now)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return result

    def _query(self, work: Callable[[sqlite3.Connection, float], T]) -> T:
        return work(self._connection(), time.time())

    async def _call(self, function: Callable[[], T]) -> T:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, function)
        except sqlite3.OperationalError as exc:
            raise StateStoreUnavailable(f"SQLite state store {self.path}: {exc}") from exc

    async def open(self) -> None:
        """Create the schema if the file is new; fail with `StateStoreUnavailable`."""
        await self._call(self._create_schema)

    async def write(self, work: Callable[[sqlite3.Connection, float], T]) -> T:
        """Run `work(conn, now)` in a `BEGIN IMMEDIATE` transaction; its result once that
        has committed (with the other writes queued meanwhile, `group_commit`)."""
        try:
            result: T = await self._group.write(work)
        except sqlite3.OperationalError as exc:  # raised by this work alone
            raise StateStoreUnavailable(f"SQLite state store {self.path}: {exc}") from exc
        return result

    async def read(self, work: Callable[[sqlite3.Connection, float], T]) -> T:
        """Run `work(conn, now)` outside a transaction (a single-statement read)."""
        return await self._call(lambda: self._query(work))

    async def close(self) -> None:
        """Finish pending calls, then close every thread's connection."""
        await self._group.flush()
        await asyncio.to_thread(self._executor.shutdown, wait=True)
        with self._connections_lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()

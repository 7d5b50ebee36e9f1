"""One writer at a time on a SQLite file, across threads and worker processes, without polling.

SQLite admits one writer; the others wait in its busy handler, which sleeps and retries
in steps of up to 100 ms. Under load (two `crcr serve` workers sharing the HUD file)
those sleeps became the tail latency: 280 ms p99 where the median was 50 ms. Writers
therefore queue on a lock instead: a thread lock inside the process, then an advisory
`flock` on a file beside the database across processes. The kernel wakes a `flock`
waiter the moment the holder lets go, and the wait releases the GIL. The busy handler
still protects against writers that do not take this lock (an older crcr, the sqlite3
shell).
"""

from __future__ import annotations

import fcntl
import os
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class SqliteWriteLock:
    """Serialises the writers of one database file; `None` for an in-memory database."""

    def __init__(self, database: Path | None) -> None:
        self._threads = threading.Lock()
        self._path = None if database is None else database.with_name(database.name + ".lock")
        self._descriptor: int | None = None
        self._opened_by = 0

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold the lock for the duration of one write transaction."""
        with self._threads:
            if self._path is None:
                yield
                return
            if self._descriptor is None or self._opened_by != os.getpid():
                # A forked child shares its parent's open file and so its flock: it opens
                # its own.
                self._descriptor = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
                self._opened_by = os.getpid()
                # Engines are dropped without notice; the descriptor goes with its lock.
                weakref.finalize(self, os.close, self._descriptor)
            fcntl.flock(self._descriptor, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self._descriptor, fcntl.LOCK_UN)

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

import asyncio
import fcntl
import os
import threading
import weakref
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
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
        """Hold the lock for the duration of one write transaction (blocks the thread)."""
        self._acquire(blocking=True)
        try:
            yield
        finally:
            self._release()

    @asynccontextmanager
    async def held_async(self) -> AsyncIterator[None]:
        """Hold the lock from the event loop: taken at once if free, else waited for in a thread.

        The holder then writes in the loop's own thread, so it never waits for the GIL
        while other processes wait for it.
        """
        if not self._acquire(blocking=False):
            waiting = asyncio.ensure_future(asyncio.to_thread(self._acquire, blocking=True))
            try:
                await asyncio.shield(waiting)
            except asyncio.CancelledError:
                # The thread cannot be stopped: whenever it gets the lock, give it back.
                waiting.add_done_callback(self._release_if_acquired)
                raise
        try:
            yield
        finally:
            self._release()

    def _acquire(self, *, blocking: bool) -> bool:
        if not self._threads.acquire(blocking=blocking):
            return False
        if self._path is None:
            return True
        try:
            flags = fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB
            fcntl.flock(self._file(), flags)
        except BlockingIOError:
            self._threads.release()
            return False
        except BaseException:
            self._threads.release()
            raise
        return True

    def _release(self) -> None:
        if self._descriptor is not None and self._path is not None:
            fcntl.flock(self._descriptor, fcntl.LOCK_UN)
        self._threads.release()

    def _release_if_acquired(self, attempt: asyncio.Future[bool]) -> None:
        if not attempt.cancelled() and attempt.exception() is None and attempt.result():
            self._release()

    def _file(self) -> int:
        if self._descriptor is None or self._opened_by != os.getpid():
            # A forked child shares its parent's open file and so its flock: it opens its own.
            self._descriptor = os.open(str(self._path), os.O_RDWR | os.O_CREAT, 0o600)
            self._opened_by = os.getpid()
            # Engines are dropped without notice; the descriptor goes with its lock.
            weakref.finalize(self, os.close, self._descriptor)
        return self._descriptor

"""The in-process HUD's SQLite writer's turn: one batch at a time, in the event loop's thread.

A SQLite batch is CPU work holding a lock that other processes wait for. Written from a
worker thread, it queued for the GIL behind the event loop at every SQLite call while
holding that lock, and the other worker's callbacks stalled on it (half the machine idle
at 2 workers). In the loop's thread it runs start to end; only waiting for the lock
happens in a worker thread. WAL checkpoints run in a worker thread every
`CHECKPOINT_EVERY` batches, off the write path.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from anyio import to_thread
from sqlalchemy import Connection, Engine

from crcr.hud.db import checkpoint_wal, held_writer, sqlite_writer_lock

log = logging.getLogger(__name__)
# SQLite batches between WAL checkpoints (~10-15 WAL pages each; SQLite's own default
# is a checkpoint per 1,000 pages).
CHECKPOINT_EVERY = 32


class SqliteWriter:
    """Writes batches under the writers' lock; checkpoints the WAL now and then.

    With `hold_connection` it keeps one connection across its batches: the pool's
    checkout and return cost ~150 µs of CPU per transaction (`db.held_writer`). Its
    owner must `close` it; should the writer be collected unclosed, the connection goes
    back to the pool then (a pooled connection the garbage collector finds checked out
    is reported by SQLAlchemy), but until then it holds a place in the pool, which is
    why only an owner that always closes (`open_hud`'s `Hud`) asks for it.
    """

    def __init__(self, engine: Engine, *, hold_connection: bool = False) -> None:
        self._engine = engine
        self._hold = hold_connection
        self._held: Connection | None = None
        self._release: weakref.finalize[[], SqliteWriter] | None = None
        self._batches_since_checkpoint = 0
        self._checkpoint: asyncio.Task[None] | None = None

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[Connection | None]:
        """The writers' lock held for one batch, and the connection to write it on (None:
        one from the pool); the caller writes the batch with `locked=True`.

        A context rather than a `write` of its own, so that the batch is written from the
        ingestor's frame: the callback's main line stays five modules long
        (`tests/relay/callback/test_main_line.py`).
        """
        async with sqlite_writer_lock(self._engine).held_async():
            connection = self._connection()
            try:
                yield connection
            finally:
                if connection is not None and connection.invalidated:
                    self._give_back()  # a broken connection is not kept: the next gets a new one
        self._batches_since_checkpoint += 1
        idle = self._checkpoint is None or self._checkpoint.done()
        if self._batches_since_checkpoint >= CHECKPOINT_EVERY and idle:
            self._batches_since_checkpoint = 0
            self._checkpoint = asyncio.create_task(self._checkpoint_wal())

    def _connection(self) -> Connection | None:
        if not self._hold:
            return None
        if self._held is None:
            self._held = held_writer(self._engine)
            self._release = weakref.finalize(self, self._held.close)
        return self._held

    def _give_back(self) -> None:
        if self._release is not None:
            self._release()  # closes the connection, once
        self._held = self._release = None

    async def _checkpoint_wal(self) -> None:
        """A WAL checkpoint in a worker thread: its fsync stays off the event loop."""
        try:
            await to_thread.run_sync(checkpoint_wal, self._engine)
        except Exception as exc:  # the next one will try again
            log.warning("HUD WAL checkpoint failed: %s", exc)

    async def close(self) -> None:
        """Let a running WAL checkpoint finish; give the held connection back.

        A batch still waiting for the lock then writes on a pooled connection: holding a
        new one after `close` would leave it to the garbage collector.
        """
        self._hold = False
        if self._checkpoint is not None:
            await self._checkpoint
        self._give_back()

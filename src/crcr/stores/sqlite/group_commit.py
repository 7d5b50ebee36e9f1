"""Write transactions of concurrent callers committed together: one fsync for many.

Each commit of the state store is durable (`synchronous=FULL`), and the fsync behind it
costs CPU as well as time: ~240 µs of it on the 2-vCPU VM of docs/benchmarks.md, and a
callback makes four or five writes. Writes that arrive while a commit is under way wait
and run in the next one, one after another, each in a savepoint of its own: a write
that raises is rolled back alone and its caller gets the exception, the others commit.
No caller hears of its write before the commit that holds it has returned, so nothing is
acknowledged that a crash could lose; a caller that gave up before its batch began is
left out of it. A lone write waits for nobody.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

Work = Callable[[sqlite3.Connection, float], Any]
"""One write transaction's body: `work(conn, now)`, run inside the batch's transaction."""


@dataclass(frozen=True)
class Raised:
    """The exception a work raised, in place of its result."""

    error: Exception


def run_in_savepoint(conn: sqlite3.Connection, work: Work, now: float) -> Any:
    """`work`'s result, or its exception as `Raised` with its writes rolled back."""
    conn.execute("SAVEPOINT work")
    try:
        result = work(conn, now)
    except Exception as exc:
        conn.execute("ROLLBACK TO work")
        conn.execute("RELEASE work")
        return Raised(exc)
    conn.execute("RELEASE work")
    return result


class GroupCommit:
    """Queues writes and hands each batch to `commit` (which runs them in one transaction
    and returns their results in order), one batch at a time."""

    def __init__(self, commit: Callable[[Sequence[Work]], Awaitable[list[Any]]]) -> None:
        self._commit = commit
        self._waiting: list[tuple[Work, asyncio.Future[Any]]] = []
        self._committer: asyncio.Task[None] | None = None

    async def write(self, work: Work) -> Any:
        """`work`'s result once the transaction that ran it has committed."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting.append((work, future))
        if self._committer is None:
            self._committer = asyncio.create_task(self._commit_while_waiting())
        return await future

    async def flush(self) -> None:
        """Return once every write queued so far has been committed (or has failed)."""
        if self._committer is not None:
            await asyncio.wait([self._committer])

    async def _commit_while_waiting(self) -> None:
        try:
            while self._waiting:
                batch = [(work, future) for work, future in self._waiting if not future.done()]
                self._waiting = []
                if batch:
                    await self._commit_batch(batch)
        finally:
            self._committer = None

    async def _commit_batch(self, batch: list[tuple[Work, asyncio.Future[Any]]]) -> None:
        try:
            outcomes = await self._commit([work for work, _ in batch])
        except Exception as exc:  # nothing of the batch was committed
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        except BaseException:
            for _, future in batch:
                future.cancel()
            raise
        for (_, future), outcome in zip(batch, outcomes, strict=True):
            if future.done():  # its caller gave up while the batch ran
                continue
            if isinstance(outcome, Raised):
                future.set_exception(outcome.error)
            else:
                future.set_result(outcome)

"""Heavy reads: shared by everyone asking at once, kept per store version, run few at a time.

A window read over 90 days (`/api/crcr/metrics?days=90` at ~300k rows: ~0.5 s) is the
same for every caller until a result is written. Uncached, 40 callers at once ran it 40
times, filled the worker threads and made the live pages' cheap `/freshness` poll wait
seconds (issue 33 item 17). So, as the pages are (`hud.web.page_cache`), an answer is
kept for (what was asked, the store's freshness version, the UTC minute: window reads
move with the day); callers asking while it is being read wait for that one read; and
heavy reads run at most `HEAVY_READS_AT_ONCE` at a time on threads of their own, so
the light reads never queue behind them. Per process; least recently used first out.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Hashable
from datetime import UTC, datetime
from typing import Any, TypeVar

from anyio import CapacityLimiter, to_thread

T = TypeVar("T")

HEAVY_READS_AT_ONCE = 2
"""Heavy reads run at once per process: a results store on two cores gains nothing from
more, and every other request keeps the rest of the worker threads."""
ANSWERS_KEPT = 32


class SharedReads:
    """Answers by (question, store version, minute), at most `size`, read `at_once` at a time."""

    def __init__(self, at_once: int = HEAVY_READS_AT_ONCE, size: int = ANSWERS_KEPT) -> None:
        self._at_once = at_once
        self._limiter: CapacityLimiter | None = None  # made in the event loop that uses it
        self._size = size
        self._kept: OrderedDict[Hashable, Any] = OrderedDict()
        self._reading: dict[Hashable, asyncio.Task[Any]] = {}

    @staticmethod
    def key(question: Hashable, version: str, now: datetime | None = None) -> Hashable:
        """The key of `question`'s answer at store `version`, this UTC minute."""
        return question, version, (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M")

    async def bounded(self, read: Callable[..., T], *args: Any) -> T:
        """Run `read(*args)` on a worker thread, at most `at_once` such reads at a time."""
        if self._limiter is None:
            self._limiter = CapacityLimiter(self._at_once)
        return await to_thread.run_sync(read, *args, limiter=self._limiter)

    async def shared(self, key: Hashable, read: Callable[..., T], *args: Any) -> T:
        """The kept answer for `key`, else the one read in flight for it, else read it now."""
        if key in self._kept:
            self._kept.move_to_end(key)
            answer: T = self._kept[key]
            return answer
        task = self._reading.get(key)
        if task is None:
            # A task of its own: a caller that gives up does not cancel the others' read.
            task = asyncio.ensure_future(self.bounded(read, *args))
            self._reading[key] = task
            task.add_done_callback(lambda done: self._settle(key, done))
        return await asyncio.shield(task)

    def _settle(self, key: Hashable, task: asyncio.Task[Any]) -> None:
        self._reading.pop(key, None)
        if task.cancelled() or task.exception() is not None:
            return  # not kept: the next caller reads again
        self._kept[key] = task.result()
        self._kept.move_to_end(key)
        while len(self._kept) > self._size:
            self._kept.popitem(last=False)

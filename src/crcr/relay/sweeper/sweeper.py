"""The sweeper: its passes in order, under the leader lock, in a loop (SPEC §1, §7).

One leader across instances (a lock in the state store) runs it in the background;
`crcr sweep` runs one pass. Every step is safe to run twice or concurrently: zombies
are finalised by an atomic transition, queue items are handed out under leases. A pass
ends well inside those leases and the leader lock (`PassLimit`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

from crcr.relay.callback.deps import AcceptedHook
from crcr.relay.callback.hud_forwarder import HUD_QUEUE, HudForwarder
from crcr.relay.callback.hud_retry import hud_queue_handler
from crcr.relay.sweeper.drain import Backoff, QueueDrainer
from crcr.relay.sweeper.handlers import QueueHandler
from crcr.relay.sweeper.overdue import OverdueJobs
from crcr.relay.sweeper.pass_limit import PassLimit
from crcr.relay.sweeper.report import SweepReport
from crcr.settings import Settings
from crcr.stores.state import StateStore, StateStoreUnavailable

log = logging.getLogger(__name__)

LOCK_NAME = "sweeper"
HUD_PARALLEL = 16  # queued HUD bodies sent at once after an outage (order does not matter)
BUSY_INTERVAL = 2.0
"""Seconds between passes while items wait in a queue (the queues' own backoff and
probe rests keep that from hammering a far end that is down): a recovered HUD or GitHub
gets what waited within seconds, not a full `interval` later."""


class Sweeper:
    """Finalise overdue jobs, then drain every retry queue through its handler.

    `on_finalised` hooks get a job the sweeper timed out or whose completion it redid,
    as the callback's `on_accepted` hooks would have. `extra_steps` run after the
    queues, each on its own (a failing one is logged): the levels' refresh is one.
    Queue items are leased for two minutes: a pass starts none later than half a lease
    after taking it (`PassLimit`), and one item (a dispatch through GitHub's retries)
    can take most of a minute.
    """

    def __init__(
        self,
        store: StateStore,
        forwarder: HudForwarder,
        settings: Settings,
        *,
        queue_handlers: Mapping[str, QueueHandler] | None = None,
        on_finalised: Sequence[AcceptedHook] = (),
        extra_steps: Sequence[Callable[[], Awaitable[None]]] = (),
        instance_id: str | None = None,
        clock: Callable[[], float] = time.time,
        backoff: Backoff | None = None,
        lease_seconds: float = 120.0,
        batch_size: int = 50,
        hook_budget: float = 10.0,
        parallel: Mapping[str, int] | None = None,
    ) -> None:
        self._store = store
        self.queue_handlers: dict[str, QueueHandler] = {
            HUD_QUEUE: hud_queue_handler(store, forwarder),
            **(queue_handlers or {}),
        }
        self.instance_id = instance_id or uuid.uuid4().hex
        self._nudged = False
        self._clock = clock
        self._lease_seconds = lease_seconds
        self.extra_steps = list(extra_steps)
        self._overdue = OverdueJobs(
            store,
            forwarder,
            settings.status_ttl,
            list(on_finalised),
            clock,
            batch_size,
            hook_budget,
        )
        self._drainer = QueueDrainer(
            store,
            backoff or Backoff(),
            lease_seconds,
            batch_size,
            parallel={HUD_QUEUE: HUD_PARALLEL, **(parallel or {})},
        )

    async def sweep_once(self) -> SweepReport:
        """One pass without the leader lock (`crcr sweep`), within half a lease."""
        return await self._sweep(PassLimit(self._clock, self._lease_seconds / 2))

    async def sweep_as_leader(self, lock_ttl: float) -> SweepReport | None:
        """Take or renew the leader lock and sweep while holding it; None if another leads."""
        if not await self._store.acquire_lock(LOCK_NAME, self.instance_id, lock_ttl):
            return None

        async def renew_lock() -> bool:
            return await self._store.acquire_lock(LOCK_NAME, self.instance_id, lock_ttl)

        budget = min(self._lease_seconds, lock_ttl) / 2
        return await self._sweep(PassLimit(self._clock, budget, renew_lock))

    async def _sweep(self, limit: PassLimit) -> SweepReport:
        """Overdue jobs first, so that their HUD rows go out in the same pass."""
        report = SweepReport()
        steps = len(self.queue_handlers) + 1
        limit.start_step(steps)
        await self._overdue.finalise(report, limit)
        for index, (queue, handler) in enumerate(self.queue_handlers.items()):
            limit.start_step(steps - 1 - index)
            await self._drainer.drain(queue, handler, report, limit)
        for step in self.extra_steps:
            try:
                await step()
            except StateStoreUnavailable:
                raise
            except Exception:
                log.exception("sweeper step %s failed", getattr(step, "__qualname__", step))
        report.waiting = await self._drainer.export_queue_gauges(self.queue_handlers)
        report.cut_short = limit.cut_short
        if report.cut_short is not None:
            log.info(
                "sweeper pass cut short (%s); the rest waits for the next pass", report.cut_short
            )
        return report

    def nudge(self) -> None:
        """Say that an item was queued: the next pass comes within `busy_interval`.

        The forwarder calls it when it queues a HUD body, so that the first failed
        write of an outage puts the sweeper on its short schedule at once.
        """
        self._nudged = True

    async def _pause(self, stop: asyncio.Event, wait: float, busy_interval: float) -> None:
        """Wait `wait` seconds, or less once nudged (checked every `busy_interval`)."""
        until = time.monotonic() + wait
        self._nudged = False
        while not stop.is_set() and not self._nudged:
            left = until - time.monotonic()
            if left <= 0:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=min(left, busy_interval))

    async def export_queue_gauges(self) -> int:
        """Publish depth and oldest age of every queue for `/metrics`; the total depth."""
        return await self._drainer.export_queue_gauges(self.queue_handlers)

    async def run(
        self, stop: asyncio.Event, *, interval: float = 15.0, busy_interval: float = BUSY_INTERVAL
    ) -> None:
        """Sweep every `interval` seconds (`busy_interval` while items wait) while this
        instance holds the leader lock.

        An instance that does not lead still refreshes its queue gauges each interval.
        """
        try:
            while not stop.is_set():
                wait = interval
                try:
                    report = await self.sweep_as_leader(interval * 4)
                    if report is None:
                        # A scrape of /metrics reaches any worker or instance, not just
                        # the leader: each keeps its own gauges of the shared queues.
                        await self.export_queue_gauges()
                    elif report.waiting:
                        wait = min(interval, busy_interval)
                except StateStoreUnavailable as exc:
                    log.warning("sweeper: state store unavailable: %s", exc)
                except Exception:
                    log.exception("sweeper pass failed")
                await self._pause(stop, wait, busy_interval)
        finally:
            with contextlib.suppress(StateStoreUnavailable):
                await self._store.release_lock(LOCK_NAME, self.instance_id)


@dataclass
class BackgroundSweeper:
    """The sweeper as an asyncio task, for the app's lifespan."""

    sweeper: Sweeper
    interval: float = 15.0
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start sweeping in the background."""
        self._task = asyncio.create_task(self.sweeper.run(self._stop, interval=self.interval))

    async def stop(self) -> None:
        """Stop after the current pass and give up the leader lock."""
        self._stop.set()
        if self._task is not None:
            await self._task
            self._task = None

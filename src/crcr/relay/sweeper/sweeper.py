"""The sweeper: its passes in order, in a loop, on every instance (SPEC §1, §7).

Every instance drains the retry queues, under the leases their items already have: a
queued HUD row or dispatch waits for no leader, so losing an instance stalls nothing.
The work that needs one leader across instances (overdue jobs, level syncs) runs only
where `Leadership` says this instance holds the short leader lock. `crcr sweep` runs
one pass (`sweep_pass`), `crcr sweep --loop` and `crcr serve` run `run`. Every step is
safe to run twice or concurrently: zombies are finalised by an atomic transition,
queue items are handed out under leases. A pass ends well inside those leases
(`PassLimit`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from crcr.config.settings import Settings
from crcr.relay.jobs.events import JobHook
from crcr.relay.jobs.job import Job
from crcr.relay.jobs.queue_handler import QueueHandler
from crcr.relay.results.forwarder import HUD_QUEUE, HudForwarder
from crcr.relay.results.retry import hud_queue_handler
from crcr.relay.sweeper.drain import QUEUE_BACKOFF, QueueDrainer
from crcr.relay.sweeper.leadership import LOCK_NAME, Leadership, instance_name
from crcr.relay.sweeper.overdue import DeadlineHandler, OverdueJobs
from crcr.relay.sweeper.pass_limit import PassLimit
from crcr.relay.sweeper.report import SweepReport
from crcr.stores.roles import Deadlines, JobStates, LeaderLock, RetryQueue
from crcr.stores.state import StateStoreUnavailable
from crcr.web.retry_policy import Backoff


class SweeperStore(JobStates, Deadlines, RetryQueue, LeaderLock, Protocol):
    """The state store's roles this module uses."""


__all__ = ["BUSY_INTERVAL", "LOCK_NAME", "BackgroundSweeper", "Sweeper"]

log = logging.getLogger(__name__)

HUD_PARALLEL = 16  # queued HUD bodies sent at once after an outage (order does not matter)
ITEM_LEASE = 6.0
"""Seconds a queue item is leased for, renewed every third of it while its handler runs
(one dispatch through GitHub's retries can take most of a minute): what an item held by
a sweeper that died waits before another hands it out. With `BUSY_INTERVAL`, it bounds
how long a result waits after a crash (goal: on the HUD ≤ 10 s after it is reachable);
it matches the leader lock's 6 s, renewed as often."""
BUSY_INTERVAL = 2.0
"""Seconds between passes while items wait in a queue (the queues' own backoff and
probe rests keep that from hammering a far end that is down): a recovered HUD or GitHub
gets what waited within seconds, not a full `interval` later."""


class Sweeper:
    """Finalise overdue jobs (as the leader), then drain every retry queue through its handler.

    `on_finalised` hooks get a job the sweeper timed out or whose completion it redid,
    as the callback's `on_accepted` hooks would have; `deadline_handlers` get other
    components' due timers on the deadline list (`overdue.DeadlineHandler`).
    `extra_steps` run after the queues, as the leader, each on its own (a failing one is
    logged): the levels' refresh is one. Queue items are leased for `ITEM_LEASE` and the
    lease is renewed while their handler runs, so one item (a dispatch through GitHub's
    retries) may take most of a minute while a dead sweeper's item waits seconds.
    """

    def __init__(
        self,
        store: SweeperStore,
        forwarder: HudForwarder,
        settings: Settings,
        *,
        queue_handlers: Mapping[str, QueueHandler] | None = None,
        on_finalised: Sequence[JobHook] = (),
        deadline_handlers: Mapping[str, DeadlineHandler] | None = None,
        extra_steps: Sequence[Callable[[], Awaitable[None]]] = (),
        instance_id: str | None = None,
        clock: Callable[[], float] = time.time,
        backoff: Backoff | None = None,
        pass_budget: float = 60.0,
        item_lease: float = ITEM_LEASE,
        batch_size: int = 50,
        hook_budget: float = 10.0,
        parallel: Mapping[str, int] | None = None,
        supersede: Callable[[Job], Awaitable[bool]] | None = None,
    ) -> None:
        self._store = store
        self.queue_handlers: dict[str, QueueHandler] = {
            HUD_QUEUE: hud_queue_handler(store, forwarder),
            **(queue_handlers or {}),
        }
        self.instance_id = instance_id or instance_name()
        self.leadership = Leadership(store, self.instance_id)
        self._nudged = asyncio.Event()
        self._clock = clock
        self._pass_budget = pass_budget
        self.extra_steps = list(extra_steps)
        self._overdue = OverdueJobs(
            store,
            forwarder,
            settings.status_ttl,
            list(on_finalised),
            clock,
            batch_size,
            hook_budget,
            dict(deadline_handlers or {}),
            supersede,
        )
        self._drainer = QueueDrainer(
            store,
            backoff or QUEUE_BACKOFF,
            item_lease,
            batch_size,
            parallel={HUD_QUEUE: HUD_PARALLEL, **(parallel or {})},
        )

    async def sweep_once(self) -> SweepReport:
        """One whole pass without the leader lock (a single process, and the tests)."""
        return await self._sweep(self._limit(leader=False), leads=lambda: True)

    async def sweep_pass(self) -> SweepReport:
        """One pass as `crcr sweep` runs it beside `crcr serve` instances.

        The queues are drained whoever leads; the leader's steps run only if the lock
        could be taken, which it is for the pass (renewed by a heartbeat) and given up
        at its end. `report.led` says which.
        """
        stop = asyncio.Event()
        await self.leadership.renew()
        keeper = asyncio.create_task(self.leadership.keep(stop))
        try:
            return await self._sweep(self._limit(), leads=lambda: self.leadership.leads)
        finally:
            stop.set()
            await keeper

    def _limit(self, stop: asyncio.Event | None = None, *, leader: bool = True) -> PassLimit:
        """`pass_budget`; the leader's steps also end when the lock does, unless the pass
        takes no lock at all (`sweep_once`)."""
        return PassLimit(
            self._clock,
            self._pass_budget,
            still_leads=(lambda: self.leadership.leads) if leader else None,
            stopping=stop.is_set if stop is not None else lambda: False,
        )

    async def _sweep(self, limit: PassLimit, leads: Callable[[], bool]) -> SweepReport:
        """Overdue jobs first, so that their HUD rows go out in the same pass."""
        report = SweepReport(led=leads())
        if report.led:
            self.leadership.gained.clear()
        steps = len(self.queue_handlers) + (1 if report.led else 0)
        if report.led:
            limit.start_step(steps)
            await self._overdue.finalise(report, limit)
            steps -= 1
        for index, (queue, handler) in enumerate(self.queue_handlers.items()):
            limit.start_step(steps - index)
            await self._drainer.drain(queue, handler, report, limit)
        if report.led and leads():
            await self._run_extra_steps()
        report.waiting = await self._drainer.export_queue_gauges(self.queue_handlers)
        report.cut_short = limit.cut_short
        if report.cut_short is not None:
            log.info(
                "sweeper pass cut short (%s); the rest waits for the next pass", report.cut_short
            )
        return report

    async def _run_extra_steps(self) -> None:
        for step in self.extra_steps:
            try:
                await step()
            except StateStoreUnavailable:
                raise
            except Exception:
                log.exception("sweeper step %s failed", getattr(step, "__qualname__", step))

    def nudge(self) -> None:
        """Say that an item was queued: the next pass comes within `busy_interval`.

        The forwarder calls it when it queues a HUD body, so that the first failed
        write of an outage puts the sweeper on its short schedule at once.
        """
        self._nudged.set()

    async def _pause(self, stop: asyncio.Event, wait: float) -> None:
        """Wait `wait` seconds, or less once nudged or newly leading, or until `stop`."""
        self._nudged.clear()
        waits = [stop.wait(), self._nudged.wait(), self.leadership.gained.wait()]
        tasks = [asyncio.ensure_future(w) for w in waits]
        try:
            await asyncio.wait(tasks, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()

    async def export_queue_gauges(self) -> int:
        """Publish depth and oldest age of every queue for `/metrics`; the total depth."""
        return await self._drainer.export_queue_gauges(self.queue_handlers)

    async def run(
        self, stop: asyncio.Event, *, interval: float = 15.0, busy_interval: float = BUSY_INTERVAL
    ) -> None:
        """Sweep every `interval` seconds (`busy_interval` while items wait) until `stop`.

        The leader lock is kept by a heartbeat of its own meanwhile, and given up when
        the loop ends (after the pass in progress, which starts nothing new once `stop`
        is set), so that another instance leads at once.
        """
        done = asyncio.Event()
        await self.leadership.renew()  # the first pass already knows whether it leads
        keeper = asyncio.create_task(self.leadership.keep(done))
        try:
            while not stop.is_set():
                wait = interval
                try:
                    report = await self._sweep(
                        self._limit(stop), leads=lambda: self.leadership.leads
                    )
                    if report.waiting:
                        wait = min(interval, busy_interval)
                except StateStoreUnavailable as exc:
                    log.warning("sweeper: state store unavailable: %s", exc)
                except Exception:
                    log.exception("sweeper pass failed")
                await self._pause(stop, wait)
        finally:
            done.set()
            await keeper


@dataclass
class BackgroundSweeper:
    """The sweeper as an asyncio task, for the app's lifespan and `crcr sweep --loop`."""

    sweeper: Sweeper
    interval: float = 15.0
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start sweeping in the background."""
        self._task = asyncio.create_task(self.sweeper.run(self._stop, interval=self.interval))

    async def stop(self, grace: float = 30.0) -> None:
        """Start nothing new, let items in flight finish for up to `grace` seconds, then
        cancel them (their leases are released, see `QueueDrainer`); give up the lock."""
        self._stop.set()
        task, self._task = self._task, None
        if task is None:
            return
        done, _ = await asyncio.wait([task], timeout=grace)
        if not done:
            log.warning("sweeper: items still in flight after %.0f s; cancelling them", grace)
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

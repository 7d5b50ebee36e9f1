"""Drain a retry queue: probe its far end, then hand ready items to its handler in parallel.

Recovery after an outage (HUD or GitHub) is what this shapes. While the far end is
down, a pass tries one item (the probe) and leaves the queue resting: the far end sees
one request per rest, however many items wait, and the untried items keep their
attempt counts (their backoff does not grow while nobody tried them). Once the probe
goes through, the rest of the queue is sent at once, a bounded number at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from crcr.relay.jobs.queue_handler import HandlerResult, QueueHandler
from crcr.relay.sweeper.metrics import QUEUE_DEPTH, QUEUE_OLDEST_AGE
from crcr.relay.sweeper.pass_limit import PassLimit
from crcr.relay.sweeper.report import SweepReport
from crcr.stores.roles import RetryQueue
from crcr.stores.state import LeasedItem, StateStoreUnavailable
from crcr.web.retry_policy import EQUAL_JITTER, Backoff

log = logging.getLogger(__name__)

PROBE_REST_CAP = 8.0
"""Longest rest between probes of a far end that is down (seconds): what a recovered
HUD or GitHub may wait before the queue notices (SPEC goal: all queued results on the
HUD within 15 s of its recovery), against one request per rest to a far end still down."""


QUEUE_BACKOFF = Backoff(base=5.0, cap=60.0, jitter=EQUAL_JITTER)
"""A released item's wait: 5 s doubling, capped at a minute, times 0.5-1.0.

The jitter spreads the retries of items that failed together so that they do not hit
the far end together when it comes back. The cap is a minute: an item that failed often
(it was the probe of a long outage) is not left waiting a quarter of an hour after its
far end recovered."""


@dataclass
class _Rest:
    """A queue whose far end looked down at its last probe: when to probe again.

    `probe_failed`: the rest began with a failed probe (the far end was down), not with
    one item failing among others sent.
    """

    until: float
    failures: int
    probe_failed: bool


@dataclass
class QueueDrainer:
    """Lease queued items in batches and settle each by what its handler made of it.

    Leases are short (`lease_seconds`) and renewed while an item's handler runs: an
    item whose sweeper died (SIGKILL) is handed out again within one lease, not after
    the longest time a handler may take.

    `parallel` bounds the items of a queue handled at once (default 1, for queues whose
    items must go out in order, such as check runs that supersede one another).
    """

    store: RetryQueue
    backoff: Backoff
    lease_seconds: float
    batch_size: int
    parallel: Mapping[str, int] = field(default_factory=dict)
    clock: Callable[[], float] = time.monotonic
    _resting: dict[str, _Rest] = field(default_factory=dict)
    _drained: set[str] = field(default_factory=set)  # queues this process has drained

    def resting(self, queue: str) -> bool:
        """Whether `queue`'s far end looked down and its next probe is not due yet."""
        rest = self._resting.get(queue)
        return rest is not None and self.clock() < rest.until

    async def drain(
        self, queue: str, handler: QueueHandler, report: SweepReport, limit: PassLimit
    ) -> None:
        """Probe one item at a time until one goes through, then send the rest in parallel.

        An item its handler skipped (superseded) says nothing of the far end, so the
        probing goes on. The first item that must be retried ends the pass for the
        queue and rests it; items already being sent finish. Items are leased one at
        a time, when there is a slot and `limit` allows more: what a pass leaves is
        free for the next pass or another sweeper at once.
        """
        if self.resting(queue):
            return
        if queue not in self._drained:
            # A process that starts (a restart after a crash) may find items that failed
            # during an outage still in backoff: they are probed like the rest.
            await self.store.wake_retries(queue)
            self._drained.add(queue)  # once it worked: a store down now is asked next pass
        while True:
            probe = await limit.allows_more() and await self._lease_one(queue)
            if not probe:
                return
            result = await self._handle(queue, handler, probe)
            report.count(queue, result)
            if result is HandlerResult.RETRY:
                self._rest(queue, report, probe_failed=True)
                return
            if result is not HandlerResult.SKIPPED:
                break
        rest = self._resting.pop(queue, None)
        if rest is not None:
            log.info("%s queue: its far end answers again; sending what waited", queue)
            if rest.probe_failed:
                # The far end was down: what failed meanwhile goes now, not after its own
                # backoff (up to `QUEUE_BACKOFF.cap`) — every result within seconds of recovery.
                # An item failing alone among others sent (a body the far end refuses)
                # keeps its backoff.
                await self.store.wake_retries(queue)
        await self._drain_parallel(queue, handler, report, limit)

    async def _drain_parallel(
        self, queue: str, handler: QueueHandler, report: SweepReport, limit: PassLimit
    ) -> None:
        slots = asyncio.Semaphore(max(1, self.parallel.get(queue, 1)))
        failed = asyncio.Event()

        async def settle(item: LeasedItem) -> None:
            try:
                result = await self._handle(queue, handler, item)
                report.count(queue, result)
                if result is HandlerResult.RETRY:
                    failed.set()
            finally:
                slots.release()

        async with asyncio.TaskGroup() as sending:
            while True:
                await slots.acquire()
                go_on = not failed.is_set() and await limit.allows_more()
                item = go_on and await self._lease_one(queue)
                if not item:
                    slots.release()
                    break
                sending.create_task(settle(item))
        if failed.is_set():
            self._rest(queue, report, probe_failed=False)

    async def _lease_one(self, queue: str) -> LeasedItem | None:
        items = await self.store.lease(queue, lease_seconds=self.lease_seconds, limit=1)
        return items[0] if items else None

    def _rest(self, queue: str, report: SweepReport, *, probe_failed: bool) -> None:
        """Leave `queue` alone for a while: its far end looks down."""
        before = self._resting.get(queue)
        failures = before.failures + 1 if before is not None else 1
        rest = min(PROBE_REST_CAP, self.backoff.delay(failures - 1))
        down = probe_failed or (before is not None and before.probe_failed)
        self._resting[queue] = _Rest(self.clock() + rest, failures, down)
        report.resting.append(queue)

    async def _keep_leased(self, queue: str, item: LeasedItem) -> None:
        """Renew `item`'s lease while its handler runs (cancelled when it returns)."""
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            try:
                held = await self.store.extend_lease(
                    queue, item.item_id, item.lease_token, lease_seconds=self.lease_seconds
                )
            except StateStoreUnavailable:
                continue
            if not held:
                log.warning("%s queue: lost the lease of item %s", queue, item.item_id)
                return

    async def _handle(self, queue: str, handler: QueueHandler, item: LeasedItem) -> HandlerResult:
        renewing = asyncio.create_task(self._keep_leased(queue, item))
        try:
            result = await handler(item)
        except asyncio.CancelledError:
            # Shutdown ran out of grace: hand the item back now rather than leave it
            # leased (to nobody) for the rest of its lease.
            with contextlib.suppress(StateStoreUnavailable):
                await asyncio.shield(
                    self.store.release(queue, item.item_id, item.lease_token, delay=0.0)
                )
            raise
        except StateStoreUnavailable:
            raise
        except Exception:
            log.exception("%s queue handler failed on item %s", queue, item.item_id)
            result = HandlerResult.RETRY
        finally:
            renewing.cancel()
        if result is HandlerResult.RETRY:
            delay = self.backoff.delay(item.attempts)
            await self.store.release(queue, item.item_id, item.lease_token, delay=delay)
        else:
            await self.store.ack(queue, item.item_id, item.lease_token)
        return result

    async def export_queue_gauges(self, queues: Iterable[str]) -> int:
        """Publish depth and oldest age of every queue for `/metrics`; the total depth."""
        total = 0
        for queue in queues:
            stats = await self.store.queue_stats(queue)
            QUEUE_DEPTH.labels(queue=queue).set(stats.depth)
            QUEUE_OLDEST_AGE.labels(queue=queue).set(stats.oldest_age_seconds)
            total += stats.depth
        return total

"""Drain a retry queue: hand each ready item to its handler, then ack it or back it off."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from crcr.relay.callback.metrics import QUEUE_DEPTH, QUEUE_OLDEST_AGE
from crcr.relay.sweeper.handlers import HandlerResult, QueueHandler
from crcr.relay.sweeper.pass_limit import PassLimit
from crcr.relay.sweeper.report import SweepReport
from crcr.stores.state import LeasedItem, StateStore, StateStoreUnavailable

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with jitter: base * 2^attempts, capped, times 0.5-1.0.

    The jitter spreads the retries of items that failed together (a HUD outage queues
    many at once) so that they do not hit the HUD together when it comes back.
    """

    base: float = 5.0
    cap: float = 900.0
    random: Callable[[], float] = random.random

    def delay(self, attempts: int) -> float:
        """Seconds before the next try of an item that has failed `attempts` times."""
        ceiling = min(self.cap, self.base * 2.0 ** min(attempts, 30))
        return float(ceiling * (0.5 + self.random() / 2))


@dataclass(frozen=True)
class QueueDrainer:
    """Lease queued items in batches and settle each by what its handler made of it."""

    store: StateStore
    backoff: Backoff
    lease_seconds: float
    batch_size: int

    async def drain(
        self, queue: str, handler: QueueHandler, report: SweepReport, limit: PassLimit
    ) -> None:
        """Handle every item of `queue` that is ready now, one leased batch at a time.

        Items leased but left when `limit` says stop stay leased: they are handed out
        again when their lease ends, and count no attempt.
        """
        seen: set[str] = set()
        while True:
            items = await self.store.lease(
                queue, lease_seconds=self.lease_seconds, limit=self.batch_size
            )
            fresh = [item for item in items if item.item_id not in seen]
            for item in fresh:
                if not await limit.allows_more():
                    return
                seen.add(item.item_id)
                result = await self._handle(queue, handler, item)
                report.count(queue, result)
            if len(items) < self.batch_size or not fresh:
                return

    async def _handle(self, queue: str, handler: QueueHandler, item: LeasedItem) -> HandlerResult:
        try:
            result = await handler(item)
        except StateStoreUnavailable:
            raise
        except Exception:
            log.exception("%s queue handler failed on item %s", queue, item.item_id)
            result = HandlerResult.RETRY
        if result is HandlerResult.RETRY:
            delay = self.backoff.delay(item.attempts)
            await self.store.release(queue, item.item_id, item.lease_token, delay=delay)
        else:
            await self.store.ack(queue, item.item_id, item.lease_token)
        return result

    async def export_queue_gauges(self, queues: Iterable[str]) -> None:
        """Publish depth and oldest age of every queue for `/metrics`."""
        for queue in queues:
            stats = await self.store.queue_stats(queue)
            QUEUE_DEPTH.labels(queue=queue).set(stats.depth)
            QUEUE_OLDEST_AGE.labels(queue=queue).set(stats.oldest_age_seconds)

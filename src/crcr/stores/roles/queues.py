"""The retry-queue role: durable queues whose items are leased to one worker at a time."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from crcr.stores.values import LeasedItem, QueueStats


class RetryQueue(Protocol):
    """Durable retry queues with leases; items stay until acknowledged, never expire."""

    async def enqueue(
        self, queue: str, item_id: str, payload: Mapping[str, Any], delay: float = 0.0
    ) -> bool:
        """Add an item, ready after `delay` seconds; False if `item_id` is queued already."""

    async def lease(self, queue: str, *, lease_seconds: float, limit: int = 10) -> list[LeasedItem]:
        """Hand out up to `limit` ready items; no one else gets them until the lease ends."""

    async def ack(self, queue: str, item_id: str, lease_token: str) -> bool:
        """Remove a leased item for good; False if the lease was lost to another worker."""

    async def release(
        self,
        queue: str,
        item_id: str,
        lease_token: str,
        *,
        delay: float,
        payload: Mapping[str, Any] | None = None,
    ) -> bool:
        """Give a leased item back, ready again after `delay`, its attempts counted."""

    async def extend_lease(
        self, queue: str, item_id: str, lease_token: str, *, lease_seconds: float
    ) -> bool:
        """Make a held lease end `lease_seconds` from now; False if it was lost.

        A worker renews the leases of items it is still handling, so that leases can be
        short: an item whose worker died is handed out again within one lease.
        """

    async def wake_retries(self, queue: str) -> int:
        """Make every retried item waiting out its backoff ready now; how many there were.

        For a queue whose far end has just come back: an item that failed during the
        outage would otherwise wait out its own backoff (up to a minute) after everything
        else was sent. Leased items, and fresh items enqueued with a delay on purpose
        (never attempted), keep their time.
        """

    async def queue_stats(self, queue: str) -> QueueStats:
        """Depth (ready, delayed and leased items) and the age of the oldest item."""

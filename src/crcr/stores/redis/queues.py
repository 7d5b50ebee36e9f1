"""The Redis store's durable retry queues, whose items are leased to one worker at a time."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from crcr.stores.keys import decode_mapping, encode
from crcr.stores.redis import scripts as lua
from crcr.stores.redis.base import RedisStoreBase
from crcr.stores.redis.encoding import QUEUE_TTL_MS, microseconds
from crcr.stores.roles.queues import RetryQueue
from crcr.stores.values import LeasedItem, QueueStats

_QUEUE_PARTS = ("items", "attempts", "leases", "ready", "enqueued")


class RedisQueues(RedisStoreBase, RetryQueue):
    """Each queue in five keys of one Cluster slot, changed together by scripts."""

    def _queue_keys(self, queue: str) -> list[str]:
        return list(self._keys.queue_set(queue, _QUEUE_PARTS))

    async def enqueue(
        self, queue: str, item_id: str, payload: Mapping[str, Any], delay: float = 0.0
    ) -> bool:
        args: list[str | int] = [item_id, encode(payload), microseconds(delay), QUEUE_TTL_MS]
        return bool(await self._run(lua.ENQUEUE, self._queue_keys(queue), args))

    async def lease(self, queue: str, *, lease_seconds: float, limit: int = 10) -> list[LeasedItem]:
        if limit < 1:
            return []
        tokens = [uuid.uuid4().hex for _ in range(limit)]
        args: list[str | int] = [microseconds(lease_seconds), QUEUE_TTL_MS, *tokens]
        rows = await self._run(lua.LEASE, self._queue_keys(queue), args)
        return [
            LeasedItem(
                item_id=item_id,
                payload=decode_mapping(payload),
                attempts=int(attempts),
                enqueued_at=int(enqueued_us) / 1_000_000,
                lease_token=token,
            )
            for item_id, payload, attempts, enqueued_us, token in rows
        ]

    async def ack(self, queue: str, item_id: str, lease_token: str) -> bool:
        return bool(await self._run(lua.ACK, self._queue_keys(queue), [item_id, lease_token]))

    async def extend_lease(
        self, queue: str, item_id: str, lease_token: str, *, lease_seconds: float
    ) -> bool:
        args: list[str | int] = [item_id, lease_token, microseconds(lease_seconds)]
        return bool(await self._run(lua.EXTEND_LEASE, self._queue_keys(queue), args))

    async def release(
        self,
        queue: str,
        item_id: str,
        lease_token: str,
        *,
        delay: float,
        payload: Mapping[str, Any] | None = None,
    ) -> bool:
        replace = ["1", encode(payload)] if payload is not None else ["0", ""]
        args: list[str | int] = [
            item_id,
            lease_token,
            microseconds(delay),
            QUEUE_TTL_MS,
            *replace,
        ]
        return bool(await self._run(lua.RELEASE, self._queue_keys(queue), args))

    async def wake_retries(self, queue: str) -> int:
        return int(await self._run(lua.WAKE_RETRIES, self._queue_keys(queue), []))

    async def queue_stats(self, queue: str) -> QueueStats:
        keys = [self._keys.queue(queue, "items"), self._keys.queue(queue, "enqueued")]
        depth, oldest_us, now_us = await self._run(lua.QUEUE_STATS, keys, [])
        if oldest_us is None:
            return QueueStats(depth=int(depth), oldest_age_seconds=0.0)
        age = max(0.0, (int(now_us) - int(oldest_us)) / 1_000_000)
        return QueueStats(depth=int(depth), oldest_age_seconds=age)

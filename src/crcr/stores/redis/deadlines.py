"""The Redis store's in-progress tracker: job keys in a sorted set by deadline (SPEC §7)."""

from __future__ import annotations

from crcr.stores.redis.base import RedisStoreBase
from crcr.stores.redis.encoding import QUEUE_TTL_MS
from crcr.stores.redis.errors import raise_failed, unavailable_on_error


class RedisDeadlines(RedisStoreBase):
    """Deadlines of unfinished jobs, so that the sweeper finds the overdue ones."""

    async def track_deadline(self, job_key: str, deadline: float) -> None:
        key = self._keys.deadlines()
        with unavailable_on_error():
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.zadd(key, {job_key: deadline})
                pipe.pexpire(key, QUEUE_TTL_MS)
                await pipe.execute()

    async def untrack_deadline(self, job_key: str, *, wait: bool = True) -> None:
        # Batched: every completed callback ends with it, and redis-py's own path for
        # one command costs several times a share of a pipeline.
        command = ("ZREM", self._keys.deadlines(), job_key)
        if not wait:
            self._batcher.send([command])
            return
        with unavailable_on_error():
            replies = await self._batcher.execute([command])
        raise_failed(replies)

    async def overdue(self, now: float, limit: int = 100) -> list[str]:
        # Through the batcher, so that it sees every untrack this process sent before.
        command = ("ZRANGEBYSCORE", self._keys.deadlines(), "-inf", now, "LIMIT", 0, limit)
        with unavailable_on_error():
            (due,) = replies = await self._batcher.execute([command])
        raise_failed(replies)
        return list(due)

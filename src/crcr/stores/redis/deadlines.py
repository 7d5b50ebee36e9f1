"""The Redis store's in-progress tracker: job keys in sorted sets by deadline (SPEC §7).

The deadlines are spread over `JOB_BUCKETS` sets, each in the Cluster slot of the job
records of its bucket, so that a script may change a job and its deadline together
(`restore_job`); `overdue` merges the buckets.
"""

from __future__ import annotations

import heapq

from crcr.stores.keys import JOB_BUCKETS
from crcr.stores.redis import scripts as lua
from crcr.stores.redis.base import RedisStoreBase
from crcr.stores.redis.encoding import QUEUE_TTL_MS, scored
from crcr.stores.redis.errors import raise_failed, unavailable_on_error
from crcr.stores.roles.deadlines import Deadlines


class RedisDeadlines(RedisStoreBase, Deadlines):
    """Deadlines of unfinished jobs, so that the sweeper finds the overdue ones."""

    async def track_deadline(self, job_key: str, deadline: float) -> None:
        args: list[str | int] = [repr(float(deadline)), job_key, QUEUE_TTL_MS]
        await self._run(lua.TRACK_DEADLINE, [self._keys.deadlines_of(job_key)], args)

    async def untrack_deadline(self, job_key: str, *, wait: bool = True) -> None:
        # Batched: every completed callback ends with it, and redis-py's own path for
        # one command costs several times a share of a pipeline.
        command = ("ZREM", self._keys.deadlines_of(job_key), job_key)
        if not wait:
            self._batcher.send([command])
            return
        with unavailable_on_error():
            replies = await self._batcher.execute([command])
        raise_failed(replies)

    async def overdue(self, now: float, limit: int = 100) -> list[str]:
        # Through the batcher, so that it sees every untrack this process sent before;
        # every bucket in the same round trip (a Cluster pipeline splits it by node).
        commands = [
            (
                "ZRANGEBYSCORE",
                self._keys.deadlines(bucket),
                "-inf",
                now,
                "WITHSCORES",
                "LIMIT",
                0,
                limit,
            )
            for bucket in range(JOB_BUCKETS)
        ]
        with unavailable_on_error():
            replies = await self._batcher.execute(commands)
        raise_failed(replies)
        # Each bucket's reply is sorted by (deadline, key), as one set's would be.
        due = heapq.merge(*(scored(reply) for reply in replies))
        return [job_key for _, job_key in list(due)[:limit]]

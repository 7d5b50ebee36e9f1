"""The Redis store's sliding-window rate limiter (SPEC §5 step 3)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from crcr.stores.redis import scripts as lua
from crcr.stores.redis.base import RedisStoreBase
from crcr.stores.redis.encoding import data_of, microseconds
from crcr.stores.roles.rate_limit import RateLimiter
from crcr.stores.values import RateDecision


def rate_args(limit: int, window_seconds: float) -> list[str | int]:
    """HIT_RATE_LIMIT's ARGV (also the head of TRANSITION_COUNTED_JOB's)."""
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    # A unique member per hit: 128 random bits as hex, as uuid4().hex was without the
    # UUID object built around them (one per callback).
    return [limit, max(1, microseconds(window_seconds)), os.urandom(16).hex()]


def rate_decision(reply: Sequence[Any]) -> RateDecision:
    allowed, remaining, retry_after = reply
    return RateDecision(bool(allowed), int(remaining), int(retry_after))


class RedisRateLimit(RedisStoreBase, RateLimiter):
    """Each key's hits in a sorted set, counted and trimmed by one script."""

    async def hit_rate_limit(self, key: str, limit: int, window_seconds: float) -> RateDecision:
        args = rate_args(limit, window_seconds)
        reply = await self._run(lua.HIT_RATE_LIMIT, [self._keys.rate(key)], args)
        return rate_decision(reply)

    async def hit_rate_limit_and_get_dispatch(
        self, key: str, limit: int, window_seconds: float, delivery_id: str, repo: str
    ) -> tuple[RateDecision, dict[str, Any] | None]:
        args = rate_args(limit, window_seconds)
        dispatch = ("HGETALL", self._keys.dispatch(delivery_id, repo))
        reply, fields = await self._run_with(
            lua.HIT_RATE_LIMIT, [self._keys.rate(key)], args, then=[dispatch]
        )
        return rate_decision(reply), (data_of(fields) if fields else None)

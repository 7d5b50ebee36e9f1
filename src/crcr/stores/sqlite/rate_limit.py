"""The SQLite store's sliding-window rate limiter (SPEC §5 step 3)."""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable
from typing import Any

from crcr.stores.keys import compose, decode_mapping
from crcr.stores.roles.rate_limit import RateLimiter
from crcr.stores.sqlite.base import SqliteStoreBase, live_value
from crcr.stores.values import RateDecision


class SqliteRateLimit(SqliteStoreBase, RateLimiter):
    """Each hit a row of `rate_hits`, counted and trimmed in one transaction."""

    async def hit_rate_limit(self, key: str, limit: int, window_seconds: float) -> RateDecision:
        return await self._db.write(rate_hit(key, limit, window_seconds))

    async def hit_rate_limit_and_get_dispatch(
        self, key: str, limit: int, window_seconds: float, delivery_id: str, repo: str
    ) -> tuple[RateDecision, dict[str, Any] | None]:
        hit = rate_hit(key, limit, window_seconds)
        dispatch_key = compose(delivery_id, repo)

        def both(conn: sqlite3.Connection, now: float) -> tuple[RateDecision, str | None]:
            return hit(conn, now), live_value(conn, "dispatch", dispatch_key, now)

        decision, value = await self._db.write(both)
        return decision, None if value is None else decode_mapping(value)


def rate_hit(
    key: str, limit: int, window_seconds: float
) -> Callable[[sqlite3.Connection, float], RateDecision]:
    """One sliding-window hit, as work for `SqliteDatabase.write`; refusals are not counted."""
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")

    def hit(conn: sqlite3.Connection, now: float) -> RateDecision:
        conn.execute("DELETE FROM rate_hits WHERE key = ? AND at <= ?", (key, now - window_seconds))
        count, oldest = conn.execute(
            "SELECT COUNT(*), MIN(at) FROM rate_hits WHERE key = ?", (key,)
        ).fetchone()
        if count < limit:
            conn.execute(
                "INSERT INTO rate_hits (key, at, expires_at) VALUES (?, ?, ?)",
                (key, now, now + window_seconds),
            )
            return RateDecision(allowed=True, remaining=limit - count - 1)
        retry_after = max(1, math.ceil(oldest + window_seconds - now))
        return RateDecision(allowed=False, remaining=0, retry_after=retry_after)

    return hit

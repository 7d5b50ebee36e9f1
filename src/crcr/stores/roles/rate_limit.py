"""The rate-limiter role (SPEC §5 step 3): sliding-window counting per caller."""

from __future__ import annotations

from typing import Any, Protocol

from crcr.stores.values import RateDecision


class RateLimiter(Protocol):
    """Sliding-window request counting, alone or with the dispatch record a callback needs."""

    async def hit_rate_limit(self, key: str, limit: int, window_seconds: float) -> RateDecision:
        """Count one request in a sliding window; refused requests are not counted."""

    async def hit_rate_limit_and_get_dispatch(
        self, key: str, limit: int, window_seconds: float, delivery_id: str, repo: str
    ) -> tuple[RateDecision, dict[str, Any] | None]:
        """`hit_rate_limit` and `get_dispatch` in one round trip (a callback needs both).

        The record is read whatever the decision; nothing but the hit is written.
        """

"""Backoff schedule shared by token minting and callback posting."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Callable

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try before giving up.

    The defaults (5 attempts: 1, 2, 4, 8 s apart plus jitter) ride out a relay
    restart or a network blip well inside the few minutes an OIDC token stays valid.
    Jitter spreads the retries of many matrix jobs that failed at the same instant.
    A `Retry-After` (429, or 503 while the relay's state store is down) replaces the
    backoff, capped at `max_retry_after`: four such waits can outlast a token, which is
    why the poster asks `FreshTokens` before every attempt.
    """

    attempts: int = 5
    first_delay: float = 1.0
    max_delay: float = 30.0
    max_retry_after: float = 120.0
    jitter: float = 0.25

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number `attempt` (1-based)."""
        base = min(self.first_delay * 2.0 ** (attempt - 1), self.max_delay)
        return base + random.uniform(0, base * self.jitter)  # noqa: S311 - not crypto


def retry_after_seconds(header: str | None, policy: RetryPolicy, *, now: datetime) -> float | None:
    """Read a `Retry-After` header (seconds or an HTTP date), capped by the policy.

    The relay's `crcr.web.retry_policy.retry_after` reads it alike (a shared table test
    holds the two together); this copy keeps the reporter to the standard library.
    """
    if header is None:
        return None
    value = header.strip()
    if value.isascii() and value.isdigit():
        seconds = float(value)
    else:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        seconds = (when - now).total_seconds()
    return min(max(seconds, 0.0), policy.max_retry_after)


async def real_sleep(seconds: float) -> None:
    """Wait on the event loop (tests pass a recording stand-in instead)."""
    await asyncio.sleep(seconds)

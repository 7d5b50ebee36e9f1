"""One retry policy: how long to wait before the next try, and what a `Retry-After` asks.

Every retry in crcr waits by a `Backoff` — the GitHub client's in-request retries, the
sweeper's queues, the HUD forwarder's short retry, the audit writer's — and reads a
far end's own hint with `retry_after`. The reporter runs on a downstream runner with the
standard library alone and keeps its own copy (`crcr.reporter.retry`), which a shared
table test holds to the same answers. A hand-written loop around `Backoff.delay` costs
nothing while nothing fails; `retrying` is the loop for calls that fail by raising
(bench.retry_policy measures both against tenacity and stamina).
"""

from __future__ import annotations

import asyncio
import math
import random as _random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import TypeVar

T = TypeVar("T")

_MAX_EXPONENT = 64
"""Retries past this grow no further (and `factor ** retry` cannot overflow)."""

# The jitter factor's range, in the names of AWS's "Exponential Backoff And Jitter".
FULL_JITTER = (0.0, 1.0)
"""Anywhere from no wait to the whole schedule: many callers of one far end spread most."""
EQUAL_JITTER = (0.5, 1.0)
"""Half the schedule at least: spread, yet no item comes back much sooner than planned."""
NO_JITTER = (1.0, 1.0)


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential backoff: `base · factor^retry`, capped at `cap`, times a jitter factor.

    The jitter factor is drawn uniformly from `jitter` (low, high): `FULL_JITTER`,
    `EQUAL_JITTER` or `NO_JITTER`. `retry` counts from 0: the wait after the first
    failure is `base`, jitter aside.
    """

    base: float
    factor: float = 2.0
    cap: float = math.inf
    jitter: tuple[float, float] = NO_JITTER

    def delay(self, retry: int, random: Callable[[], float] = _random.random) -> float:
        """Seconds to wait before retry number `retry` (from 0), jittered by `random()`."""
        low, high = self.jitter
        ceiling = min(self.cap, self.base * self.factor ** min(retry, _MAX_EXPONENT))
        return ceiling * (low + (high - low) * random())


def retry_after(value: str | None, *, now: float, cap: float = math.inf) -> float | None:
    """Seconds a `Retry-After` value asks to wait, at most `cap`; None if there is none.

    RFC 9110 §10.2.3: delay-seconds (ASCII digits only: "-5", "1.5" and "²" are
    unreadable, not errors) or an HTTP-date, which is GMT even when written without a
    zone (asctime). A date in the past asks for no wait. `now` is Unix time.
    """
    if value is None:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        seconds = float(value)
    else:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = when.timestamp() - now
    return min(max(seconds, 0.0), cap)


async def retrying(
    attempt: Callable[[], Awaitable[T]],
    *,
    backoff: Backoff,
    retry_on: type[Exception] | tuple[type[Exception], ...],
    tries: int | None = None,
    deadline: float | None = None,
    hint: Callable[[Exception], float | None] | None = None,
    on_retry: Callable[[Exception, float], object] | None = None,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    clock: Callable[[], float] = time.monotonic,
    random: Callable[[], float] = _random.random,
) -> T:
    """Await `attempt()` until it returns; retry what raises `retry_on`, waiting by `backoff`.

    The last failure is raised once `tries` calls failed (None: try until it works or
    the task is cancelled), or when the wait would end past `deadline` (on `clock`).
    `hint` reads the wait a failure asks for itself (a `Retry-After`), which replaces
    the backoff's; `on_retry` hears each failure and the wait before the next try.
    """
    retry = 0
    while True:
        try:
            return await attempt()
        except retry_on as failure:
            asked = hint(failure) if hint is not None else None
            wait = backoff.delay(retry, random) if asked is None else asked
            retry += 1
            if tries is not None and retry >= tries:
                raise
            if deadline is not None and clock() + wait >= deadline:
                raise
            if on_retry is not None:
                on_retry(failure, wait)
            await sleep(wait)

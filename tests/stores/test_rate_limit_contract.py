"""The rate-limiter role's contract, on Redis and on SQLite."""

from __future__ import annotations

import asyncio
import math
import time
from typing import Protocol

from tests.waiting import eventually

from crcr.stores.roles import Dispatches, RateLimiter
from crcr.stores.state import RateDecision


class LimitedRecords(RateLimiter, Dispatches, Protocol):
    """A hit counted and a dispatch record read, as a callback does in one round trip."""


# --- rate limiting ----------------------------------------------------------------


async def test_rate_limit_counts_down_then_refuses_with_retry_after(store: RateLimiter) -> None:
    decisions = [await store.hit_rate_limit("org/repo", 3, 60) for _ in range(4)]
    assert [(d.allowed, d.remaining) for d in decisions] == [
        (True, 2),
        (True, 1),
        (True, 0),
        (False, 0),
    ]
    assert 59 <= decisions[-1].retry_after <= 60
    assert (await store.hit_rate_limit("org/other", 3, 60)).allowed is True


async def test_refused_requests_do_not_extend_the_lockout(store: RateLimiter) -> None:
    first = await store.hit_rate_limit("org/repo", 1, 1.0)
    started = time.monotonic()
    assert first.allowed

    async def allowed_again() -> bool:
        decision = await store.hit_rate_limit("org/repo", 1, 1.0)
        assert decision.allowed or decision.retry_after == 1
        return decision.allowed

    # Had the refused polls been counted, the window would never drain.
    await eventually(allowed_again, within=3.0)
    assert 0.9 <= time.monotonic() - started < 2.0


async def test_the_window_slides_so_hits_leave_it_one_by_one(store: RateLimiter) -> None:
    """Limit 2: A at t0 and B at t0 + w/2 are let in; just after t0 + w, A has left and C
    is let in, but B still counts, so D is refused until B leaves. A fixed window would
    have forgotten B and let D in.
    """
    window = 2.5  # so that "until B leaves" (~1.25 s, rounded up: 2) is not a whole window

    async def hit() -> tuple[RateDecision, float, float]:
        """One hit, with the monotonic times between which the store counted it."""
        before = time.monotonic()
        decision = await store.hit_rate_limit("org/repo", 2, window)
        return decision, before, time.monotonic()

    a, a_before, a_after = await hit()

    async def half_a_window_on() -> bool:
        return time.monotonic() - a_after >= window / 2

    await eventually(half_a_window_on)
    b, b_before, b_after = await hit()
    assert (a.allowed, a.remaining, b.allowed, b.remaining) == (True, 1, True, 0)

    polls: list[tuple[RateDecision, float, float]] = []

    async def let_in_again() -> bool:  # refused polls are not counted
        polls.append(await hit())
        return polls[-1][0].allowed

    await eventually(let_in_again, within=2 * window)
    c, _, c_after = polls[-1]
    assert c_after - a_before >= window - 0.01  # allowed only once A's window was over
    assert c.remaining == 0  # B still counts
    d, d_before, d_after = await hit()
    assert not d.allowed
    # D waits for B to leave (at B + window), rounded up to whole seconds.
    earliest = math.ceil(b_before + window - d_after - 0.01)
    latest = math.ceil(b_after + window - d_before + 0.01)
    assert earliest <= d.retry_after <= latest


async def test_500_concurrent_hits_with_limit_100_allow_exactly_100(store: RateLimiter) -> None:
    decisions = await asyncio.gather(
        *(store.hit_rate_limit("org/repo", 100, 60) for _ in range(500))
    )
    assert sum(decision.allowed for decision in decisions) == 100
    assert sorted(d.remaining for d in decisions if d.allowed) == list(range(100))


async def test_rate_limit_hit_and_dispatch_read_in_one_call(store: LimitedRecords) -> None:
    await store.put_dispatch("d1", "org/repo", {"status": "DISPATCHED"}, 60)

    first, record = await store.hit_rate_limit_and_get_dispatch("org/repo", 2, 60, "d1", "org/repo")
    second, missing = await store.hit_rate_limit_and_get_dispatch(
        "org/repo", 2, 60, "d2", "org/repo"
    )
    refused, still = await store.hit_rate_limit_and_get_dispatch(
        "org/repo", 2, 60, "d1", "org/repo"
    )

    assert (first.allowed, first.remaining, record) == (True, 1, {"status": "DISPATCHED"})
    assert (second.allowed, second.remaining, missing) == (True, 0, None)
    assert (refused.allowed, still) == (False, {"status": "DISPATCHED"})
    assert 59 <= refused.retry_after <= 60
    # The combined call counts in the same window as the plain one.
    assert (await store.hit_rate_limit("org/repo", 2, 60)).allowed is False

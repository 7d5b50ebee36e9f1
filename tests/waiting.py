"""Waiting on a condition instead of sleeping: the one polling loop every test uses.

The bound is only how long a broken test takes to fail, so it is generous by default:
a loaded CI machine must not turn a slow pass into a failure. Where a test measures a
goal, it asserts on the seconds returned, never on the bound. Polls are 50 ms apart by
default: a condition may be an HTTP request to the relays a test is timing.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable

Condition = Callable[[], bool] | Callable[[], Awaitable[bool]]


async def eventually(
    condition: Condition, within: float = 30.0, what: str = "the condition", every: float = 0.05
) -> float:
    """Poll `condition` (plain or async) until it holds; the seconds it took.

    Fails after `within` seconds, naming `what` was waited for.
    """
    started = time.monotonic()
    while True:
        held = condition()
        if inspect.isawaitable(held):
            held = await held
        if held:
            return time.monotonic() - started
        assert time.monotonic() - started < within, f"not within {within:g} s: {what}"
        await asyncio.sleep(every)

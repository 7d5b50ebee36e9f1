"""What a retry queue's owner gives the sweeper: a handler, and what it made of an item.

Here, below both, because the queue owners (fan-out, check publisher, oncall comments,
HUD forwarding) and the sweeper that drains their queues all speak it and none of them
may depend on another.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from enum import StrEnum

from crcr.stores.state import LeasedItem


class HandlerResult(StrEnum):
    """What a queue handler made of one item."""

    DONE = "done"  # acknowledged: delivered, or no longer needed
    RETRY = "retry"  # released with backoff
    DROP = "drop"  # acknowledged and logged: retrying can never succeed
    SKIPPED = "skipped"  # acknowledged unsent (superseded): says nothing of the far end


QueueHandler = Callable[[LeasedItem], Awaitable[HandlerResult]]

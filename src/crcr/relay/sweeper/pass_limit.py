"""How long one sweeper pass may go on (see `PassLimit`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable


class PassLimit:
    """Whether a pass may start one more job or item: it has time left, and still leads.

    A pass must end well inside the leases it takes (an item still being handled when
    its lease ends can be handed to another sweeper) and, when leading, inside the
    leader lock (a lapsed lock lets another instance lead). So it stops starting work
    after half the shorter of the two, renews the lock before each job or item, and
    leaves the rest for the next pass. Each step (overdue jobs, then each queue) gets
    an equal share of the time left, so that a slow queue (a hanging HUD) cannot starve
    the others.
    """

    def __init__(
        self,
        clock: Callable[[], float],
        budget: float,
        renew_lock: Callable[[], Awaitable[bool]] | None = None,
    ) -> None:
        self._clock = clock
        self._ends_at = clock() + budget
        self._step_ends_at = self._ends_at
        self._renew_lock = renew_lock
        self.cut_short: str | None = None

    def start_step(self, steps_left: int) -> None:
        """Give the next step its share of the time left."""
        now = self._clock()
        self._step_ends_at = now + max(0.0, self._ends_at - now) / steps_left

    async def allows_more(self) -> bool:
        """Whether to start one more job or item of the current step."""
        if self._clock() >= self._step_ends_at:
            self.cut_short = self.cut_short or "out of time"
            return False
        if self._renew_lock is not None and not await self._renew_lock():
            self.cut_short = "lost the leader lock"
            return False
        return True

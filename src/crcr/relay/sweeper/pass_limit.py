"""How long one sweeper pass may go on (see `PassLimit`)."""

from __future__ import annotations

from collections.abc import Callable


class PassLimit:
    """Whether a pass may start one more job or item: it has time left, is not stopping,
    and, for the leader's work, still leads.

    A pass must end well inside the leases it takes (an item still being handled when
    its lease ends can be handed to another sweeper), so it stops starting work after
    half a lease and leaves the rest for the next pass. Each step (overdue jobs, then
    each queue) gets an equal share of the time left, so that a slow queue (a hanging
    HUD) cannot starve the others. The leader's steps also stop as soon as `still_leads`
    says the lock is gone (another instance may be doing the same work by then); the
    queues need no leader. `stopping` is the process shutting down: nothing new starts.
    """

    def __init__(
        self,
        clock: Callable[[], float],
        budget: float,
        still_leads: Callable[[], bool] | None = None,
        stopping: Callable[[], bool] = lambda: False,
    ) -> None:
        self._clock = clock
        self._ends_at = clock() + budget
        self._step_ends_at = self._ends_at
        self._still_leads = still_leads
        self._stopping = stopping
        self.cut_short: str | None = None

    def start_step(self, steps_left: int) -> None:
        """Give the next step its share of the time left."""
        now = self._clock()
        self._step_ends_at = now + max(0.0, self._ends_at - now) / steps_left

    async def allows_more(self) -> bool:
        """Whether to start one more item of the current step."""
        if self._stopping():
            self.cut_short = self.cut_short or "shutting down"
            return False
        if self._clock() >= self._step_ends_at:
            self.cut_short = self.cut_short or "out of time"
            return False
        return True

    async def allows_more_as_leader(self) -> bool:
        """Whether to start one more piece of the leader's work (an overdue job)."""
        if not await self.allows_more():
            return False
        if self._still_leads is not None and not self._still_leads():
            self.cut_short = "lost the leader lock"
            return False
        return True

"""The deadline role (SPEC §7): in-progress jobs ordered by when they must finish."""

from __future__ import annotations

from typing import Protocol


class Deadlines(Protocol):
    """The in-progress tracker the sweeper reads to find zombies."""

    async def track_deadline(self, job_key: str, deadline: float) -> None:
        """Remember that `job_key` must finish by `deadline` (epoch seconds)."""

    async def untrack_deadline(self, job_key: str, *, wait: bool = True) -> None:
        """Forget the deadline of a finished job.

        `wait=False`: the store may do it after returning and drop it should that fail,
        for a caller to whom a job left tracked only costs a harmless sweeper visit. A
        later `overdue` of the same store object still sees it done.
        """

    async def overdue(self, now: float, limit: int = 100) -> list[str]:
        """Job keys whose deadline is at or before `now`, earliest first."""

"""The leader-lock role: one sweeper across instances."""

from __future__ import annotations

from typing import Protocol


class LeaderLock(Protocol):
    """A named lock with an expiry, renewed by its holder."""

    async def acquire_lock(self, name: str, owner: str, ttl: float) -> bool:
        """Take or renew the lock if free or already ours; True when we hold it."""

    async def release_lock(self, name: str, owner: str) -> None:
        """Give up the lock if we hold it."""

"""The store's lifecycle role: answering a health check, and releasing connections."""

from __future__ import annotations

from typing import Protocol


class Lifecycle(Protocol):
    """Health and shutdown: what `/readyz` and whoever opened the store call."""

    async def ping(self) -> None:
        """Raise `StateStoreUnavailable` unless the store answers."""

    async def close(self) -> None:
        """Release connections."""

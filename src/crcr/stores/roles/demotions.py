"""The demotion role (SPEC §10.1): temporary demotions, kept until the relay ends them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class Demotions(Protocol):
    """The demotions in force, by repo; they never expire, they are ended explicitly."""

    async def add_demotion(self, repo: str, record: Mapping[str, Any]) -> bool:
        """Record that `repo` is demoted; False (nothing changed) if it already is.

        Created once, so that its `since` stays the moment the demotion began however
        many instances or passes see the same verdict.
        """

    async def update_demotion(self, repo: str, changes: Mapping[str, Any]) -> bool:
        """Merge `changes` (e.g. the pull request's URL) into a demotion; False if none."""

    async def remove_demotion(self, repo: str) -> bool:
        """End a demotion; False if `repo` was not demoted."""

    async def demotions(self) -> dict[str, dict[str, Any]]:
        """Every current demotion by repo (lower-cased), without expiry: they end explicitly."""

"""The idempotency and dispatch-record roles (SPEC §4): claims once, one record per repo."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol


class Idempotency(Protocol):
    """First-caller-wins claims: a delivery handled once, a refresh run by one instance."""

    async def claim_once(self, key: str, ttl: int) -> bool:
        """Return True for the first caller to claim `key` within `ttl`, False after."""


class Dispatches(Protocol):
    """The dispatch record of each (delivery, downstream repo) a webhook fanned out to."""

    async def put_dispatch(
        self, delivery_id: str, repo: str, record: Mapping[str, Any], ttl: int
    ) -> bool:
        """Create the dispatch record for (delivery_id, repo); False if one exists."""

    async def update_dispatch(
        self, delivery_id: str, repo: str, changes: Mapping[str, Any], ttl: int
    ) -> bool:
        """Merge `changes` into an existing record; False if there is none."""

    async def put_dispatches(
        self, delivery_id: str, records: Mapping[str, Mapping[str, Any]], ttl: int
    ) -> set[str]:
        """`put_dispatch` for many repos in one round trip; returns the repos created.

        A fan-out to hundreds of repos writes its pending records together, so the
        store costs one round trip (Redis) or one transaction (SQLite) per event.
        """

    async def update_dispatches(
        self, delivery_id: str, changes: Mapping[str, Mapping[str, Any]], ttl: int
    ) -> None:
        """`update_dispatch` for many repos in one round trip (missing records are skipped)."""

    async def get_dispatch(self, delivery_id: str, repo: str) -> dict[str, Any] | None:
        """Return the dispatch record, or None."""

    async def get_dispatches(
        self, delivery_id: str, repos: Sequence[str]
    ) -> dict[str, dict[str, Any]]:
        """`get_dispatch` for many repos in one round trip; repos without one are left out."""

"""The governance-record role (SPEC §10.2): declines, overrides and level-history episodes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class GovernanceRecords(Protocol):
    """JSON records by (kind, key) that never expire: the relay ends or prunes them.

    Kinds are the relay's (`decline`, `override`, `episode`, `level`); a key is
    usually a lower-cased repo. Shared by every instance, so a decline or an override
    written by one is read by all.
    """

    async def put_governance(self, kind: str, key: str, record: Mapping[str, Any]) -> None:
        """Create or replace the record (`kind`, `key`)."""

    async def remove_governance(self, kind: str, key: str) -> bool:
        """Remove the record; False if there was none."""

    async def governance(self, kind: str) -> dict[str, dict[str, Any]]:
        """Every record of `kind`, by key."""

"""The allowlist-stamp and audit-log roles (SPEC §12): revocation and the audit trail."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol


class AllowlistStamp(Protocol):
    """The version stamp of the allowlist in use, moved on when it is revoked or changed."""

    async def allowlist_stamp(self) -> int:
        """The version stamp of the allowlist in use: 0 until it is first moved.

        Every instance reads it before its callback decisions (one cheap read, memoised
        for a moment), and re-reads the allowlist when it has moved.
        """

    async def move_allowlist_stamp(self) -> int:
        """Move the stamp on by one, atomically, and return the new value (never expires)."""


class AuditLog(Protocol):
    """The audit trail: entries kept per bucket (a downstream repo), newest first."""

    async def append_audit(
        self, entries: Sequence[Mapping[str, Any]], *, keep_seconds: float, keep_per_repo: int
    ) -> None:
        """Keep `entries` (JSON objects, each with a `bucket` string and an `at` epoch time).

        Entries are grouped per bucket (a downstream repo, lower-cased); afterwards no
        bucket holds entries older than `keep_seconds` or more than `keep_per_repo`
        entries (the newest are kept). One round trip or transaction per call.
        """

    async def audit_entries(
        self, bucket: str | None = None, *, since: float = 0.0, limit: int = 1000
    ) -> list[dict[str, Any]]:
        """Up to `limit` entries at or after `since`, newest first; every bucket if None."""

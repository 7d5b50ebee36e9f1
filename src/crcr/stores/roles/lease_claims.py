"""The lease-claim role (SPEC §7 oncall): do a thing once across workers, e.g. one comment."""

from __future__ import annotations

from typing import Protocol

from crcr.stores.values import LeaseClaim


class LeaseClaims(Protocol):
    """Claims held for a lease until a value is settled; the first value settled wins."""

    async def claim_lease(
        self, name: str, key: str, owner: str, *, lease: float, ttl: int
    ) -> LeaseClaim:
        """Claim the right to do (name, key) once, e.g. post a PR comment, atomically.

        A value settled already: `LeaseClaim(False, value)`, nothing changes. No holder,
        an expired lease, or `owner`'s own: `owner` holds it for `lease` seconds,
        `LeaseClaim(True)`. Another owner's live lease: `LeaseClaim(False)`. The record
        lives `ttl` seconds; a holder that dies is replaced when its lease ends.
        """

    async def settle_lease(
        self, name: str, key: str, owner: str, value: str | None, ttl: int
    ) -> str | None:
        """Record `value` (non-empty) for (name, key) unless one is recorded; return it.

        The first value settled wins and is returned (a holder whose lease ran out can
        tell that another did the thing too). `value=None` gives up `owner`'s hold
        without a value, so the next claim need not wait for the lease to end.
        """

    async def leased_value(self, name: str, key: str) -> str | None:
        """The value settled for (name, key), or None; claims nothing."""

"""The bisection role (SPEC §14): one record per (backend, good, bad) range, changed by CAS."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class Bisections(Protocol):
    """Bisection records by key; each carries an integer `version` that every change bumps.

    Created once (the first instance to start a range wins, so two instances never run
    the same bisection) and replaced only by whoever read the current version, so a
    leader that lost its lock mid-pass cannot undo its successor's steps. They last
    until removed: a bisection spans restarts and leader changes.
    """

    async def create_bisection(self, key: str, record: Mapping[str, Any]) -> bool:
        """Create the record; False (nothing changed) if `key` exists already."""

    async def replace_bisection(self, key: str, record: Mapping[str, Any], *, version: int) -> bool:
        """Replace the record if its stored `version` is `version`; False otherwise."""

    async def remove_bisection(self, key: str) -> bool:
        """Forget a record; False if there was none."""

    async def bisections(self) -> dict[str, dict[str, Any]]:
        """Every record, by key."""

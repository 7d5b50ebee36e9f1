"""A capped backend's hardware budget as its page shows it (SPEC §15): running / waiting.

The numbers live in the relay's state store, not the results store, so a relay beside
the HUD lends a lookup (`crcr.relay.budgets.board`); a HUD on its own shows none.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class BudgetShown:
    """How many of a backend's `max_concurrent` slots are taken, and how many wait."""

    max_concurrent: int
    running: int
    waiting: int


BudgetLookup = Callable[[str], Awaitable[BudgetShown | None]]
"""A backend (owner/repo) → its budget, or None when it has no cap."""

BudgetSource = Callable[[], BudgetLookup | None]
"""The lookup once the app has opened it (None: no relay beside the HUD)."""

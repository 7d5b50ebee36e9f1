"""What the backend page shows of a capped backend (SPEC §15): its slots and its line."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from crcr.hud.web.budget_view import BudgetShown
from crcr.relay.allowlist.model import Allowlist
from crcr.relay.budgets.cap import pool_of
from crcr.stores.roles import BudgetSlots


class BudgetBoard:
    """Answers the HUD's budget lookup from the state store, for capped entries only."""

    def __init__(
        self,
        store: BudgetSlots,
        allowlist: Callable[[], Awaitable[Allowlist]],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._allowlist = allowlist
        self._clock = clock

    async def shown(self, repo: str) -> BudgetShown | None:
        """The backend's budget now; None without a cap (no store read then)."""
        entry = (await self._allowlist()).entry(repo)
        if entry is None or entry.budget.max_concurrent is None:
            return None
        view = await self._store.pool_view(pool_of(entry.repo))
        now = self._clock()
        running = sum(1 for until in view.running.values() if until > now)
        return BudgetShown(entry.budget.max_concurrent, running, len(view.waiting))

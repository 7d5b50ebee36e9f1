"""The SQLite store's budget slots: one JSON row per pool, changed in one transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from typing import Any

from crcr.stores.budget_pool import Pool, change
from crcr.stores.roles.budget_slots import BudgetSlots, PoolView, SlotChange, SlotTerms
from crcr.stores.sqlite.base import SqliteStoreBase, live_value, put_value, ttl_seconds

KIND = "budget-pool"


class SqliteBudgetSlots(SqliteStoreBase, BudgetSlots):
    """Read, change and admit, then write back: the write lock makes it one step."""

    async def _change(
        self, pool: str, terms: SlotTerms, step: Callable[[Pool, int, int], list[Any]]
    ) -> SlotChange:
        hold_ms, expires_in = int(terms.hold_for * 1000), ttl_seconds(terms.ttl)

        def apply(conn: sqlite3.Connection, now: float) -> SlotChange:
            state = Pool.load(live_value(conn, KIND, pool, now))
            now_ms = int(now * 1000)
            replaced = step(state, now_ms, hold_ms)
            admitted = state.admit(terms.limit, now_ms, hold_ms)
            put_value(conn, KIND, pool, state.dump(), now + expires_in)
            return change(admitted, replaced)

        return await self._db.write(apply)

    async def join_pool(
        self,
        pool: str,
        place: str,
        holder: str,
        payload: Mapping[str, Any],
        terms: SlotTerms,
        order: Mapping[str, str] | None = None,
    ) -> SlotChange:
        return await self._change(
            pool, terms, lambda state, _n, _h: state.join(place, holder, payload, order)
        )

    async def note_job(
        self, pool: str, holder: str, job: str, *, finished: bool, terms: SlotTerms
    ) -> SlotChange:
        def step(state: Pool, now_ms: int, hold_ms: int) -> list[Any]:
            state.note(holder, job, finished=finished, now_ms=now_ms, hold_ms=hold_ms)
            return []

        return await self._change(pool, terms, step)

    async def leave_pool(self, pool: str, holder: str, terms: SlotTerms) -> SlotChange:
        return await self._change(pool, terms, lambda state, _n, _h: state.free(holder))

    async def refill_pool(self, pool: str, terms: SlotTerms) -> SlotChange:
        return await self._change(pool, terms, lambda _s, _n, _h: [])

    async def pool_view(self, pool: str) -> PoolView:
        text = await self._db.read(lambda conn, now: live_value(conn, KIND, pool, now))
        return Pool.load(text).view()

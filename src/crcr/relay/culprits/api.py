"""`GET /api/crcr/culprits` (SPEC §14): every bisection and its verdict, newest first."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Query

from crcr.relay.culprits.record import Bisection
from crcr.relay.culprits.report import culprit_json, newest_first, readable
from crcr.stores.roles import Bisections


async def stored_bisections(store: Bisections) -> list[Bisection]:
    """Every bisection in the store that this release can read."""
    raws = (await store.bisections()).values()
    return [Bisection.from_store(raw) for raw in raws if readable(raw)]


def culprits_router(
    store: Callable[[], Bisections], clock: Callable[[], float] = time.time
) -> APIRouter:
    """The culprits route; `store` is looked up per request (the runtime opens late)."""
    router = APIRouter(tags=["hud"])

    @router.get("/api/crcr/culprits")
    async def culprits(
        repo: Annotated[
            str | None, Query(max_length=201, description="Only this backend (owner/repo).")
        ] = None,
    ) -> dict[str, Any]:
        """Each bisection: range, verdict, culprit, dispatches, duration and steps."""
        found = newest_first(await stored_bisections(store()), repo)
        now = clock()
        return {"culprits": [culprit_json(b, now) for b in found]}

    return router

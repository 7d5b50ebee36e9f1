"""`GET /api/crcr/alerts` (SPEC §13): the last alerts raised, newest first."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Query

from crcr.relay.alerts.watch import recent_alerts
from crcr.stores.roles import AuditLog

MAX_ALERTS = 200


def alerts_router(store: Callable[[], AuditLog]) -> APIRouter:
    """The alert log's route; `store` is looked up per request (the runtime opens late)."""
    router = APIRouter(tags=["hud"])

    @router.get("/api/crcr/alerts")
    async def alerts(
        limit: Annotated[int, Query(ge=1, le=MAX_ALERTS, description="How many.")] = 50,
    ) -> dict[str, Any]:
        """The last alerts (kind, repo, from, to, at, url), never a sink's URL or secret."""
        return {"alerts": await recent_alerts(store(), limit)}

    return router

"""`GET /api/crcr/health` (SPEC §13): the canary's verdict and every backend's state."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, HTTPException

from crcr.hud.health.memo import HealthMemo


def health_router(memo: Callable[[], HealthMemo | None]) -> APIRouter:
    """The health route; `memo` is looked up per request (the runtime opens late)."""
    router = APIRouter(tags=["hud"])

    @router.get("/api/crcr/health")
    async def health() -> dict[str, Any]:
        """Healthy, Degraded or no data, with only what went wrong, and backend states."""
        live = memo()
        if live is None:
            raise HTTPException(404, "relay health needs the in-process HUD")
        report = await live.fresh()
        return report.as_json()

    return router

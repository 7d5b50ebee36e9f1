"""The relay health page (SPEC §13): the canary's verdict, what went wrong, backend states."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from crcr.hud.web.pages.site import Site

STATE_TONES = {
    "passing": "good",
    "failing": "bad",
    "flaky": "warn",
    "stale": "warn",
    "no_data": "muted",
    "passed": "good",
    "failed": "bad",
    "overdue": "bad",
    "running": "running",
    "healthy": "good",
    "degraded": "bad",
}


def add_health_page(router: APIRouter, site: Site) -> None:
    """Serve `<prefix>/health` (404 on a HUD without the relay's health)."""

    @router.get(f"{site.prefix}/health", response_class=HTMLResponse)
    async def health_page() -> HTMLResponse:
        """Healthy or Degraded, listing only the unexpected and overdue probes."""
        memo = None if site.health is None else site.health()
        if memo is None:
            return site.error(404, "Not available", "Relay health needs the relay's own HUD.")
        report = await memo.fresh()
        return site.html(
            "health.html",
            "health",
            report=report,
            tones=STATE_TONES,
            api_href="/api/crcr/health",
            alerts_href=None if memo.alerts is None else f"{site.prefix}/alerts",
            backend_href=site.backend_href,
        )

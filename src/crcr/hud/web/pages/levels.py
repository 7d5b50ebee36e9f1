"""The levels page: each backend's level, verdict, criteria and history; demotions apart."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from crcr.hud.web import level_views
from crcr.hud.web.pages.site import Site


def add_levels_page(router: APIRouter, site: Site) -> None:
    """Serve `<prefix>/levels` (404 on a HUD without level status)."""

    @router.get(f"{site.prefix}/levels", response_class=HTMLResponse)
    async def levels_page() -> HTMLResponse:
        """Each backend's level, verdict, criteria and level history; demotions apart."""
        if site.levels is None:
            return site.error(404, "Not available", "This HUD has no level status.")
        service = site.levels()
        rows = level_views.level_rows(await service.report())
        return site.html(
            "levels.html",
            "levels",
            rows=rows,
            demoted=[row for row in rows if row.demotion is not None],
            demotion_days=service.criteria.demotion_window_days,
            promotion_days=service.criteria.promotion_window_days,
            api_href="/api/crcr/level-status",
            backend_href=site.backend_href,
        )

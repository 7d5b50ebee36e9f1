"""The metrics page: queue and execution time percentiles per backend, day by day."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from crcr.hud.web import latency
from crcr.hud.web.pages.site import BadParameter, Site, href, today, window_of


def add_latency_page(router: APIRouter, site: Site) -> None:
    """Serve `<prefix>/metrics`."""

    @router.get(f"{site.prefix}/metrics", response_class=HTMLResponse)
    async def metrics_page(request: Request) -> HTMLResponse:
        """Queue and execution time percentiles per backend, day by day."""
        try:
            window = window_of(request.query_params)
        except BadParameter as problem:
            return site.bad_request(problem)
        points = await site.facade().latency_percentiles(window)
        return site.html(
            "metrics.html",
            "metrics",
            window=window,
            panels=latency.latency_panels(points, latency.window_days(window, today())),
            window_href=lambda days: href(f"{site.prefix}/metrics", window=days),
            backend_href=site.backend_href,
        )

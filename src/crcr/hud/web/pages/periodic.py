"""The nightly page: the latest upstream commit each backend's scheduled runs tested."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from crcr.hud.web.pages.site import BadParameter, Site, href, window_of


def add_periodic_page(router: APIRouter, site: Site) -> None:
    """Serve `<prefix>/nightly`."""

    @router.get(f"{site.prefix}/nightly", response_class=HTMLResponse)
    async def nightly_page(request: Request) -> HTMLResponse:
        """The latest upstream commit each backend's scheduled runs tested."""
        try:
            window = window_of(request.query_params)
        except BadParameter as problem:
            return site.bad_request(problem)
        rows = await site.facade().periodic(window)
        return site.html(
            "nightly.html",
            "nightly",
            window=window,
            rows=rows,
            window_href=lambda days: href(f"{site.prefix}/nightly", window=days),
            backend_href=site.backend_href,
        )

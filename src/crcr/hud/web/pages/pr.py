"""The PR page: every backend's jobs for one upstream pull request, live."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from crcr.hud.web import views
from crcr.hud.web.pages.site import Site


def add_pr_page(router: APIRouter, site: Site) -> None:
    """Serve `<prefix>/pr/<number>`."""

    @router.get(site.prefix + "/pr/{number}", response_class=HTMLResponse)
    async def pr_page(number: str, request: Request) -> HTMLResponse:
        """Every backend's jobs for one upstream pull request."""
        if not number.isdigit() or int(number) < 1:
            return site.error(
                400, "Bad request", f"PR number must be a positive integer: {number!r}"
            )
        fresh, drawn = await site.live(request)
        if drawn is not None:
            return drawn
        view = await site.facade().pr(int(number))
        backends = views.pr_backends(view)
        return site.html(
            "pr.html",
            "",
            live=fresh,
            view=view,
            backends=backends,
            lead=views.pr_lead_line(backends) if backends else None,
            backend_href=site.backend_href,
        )

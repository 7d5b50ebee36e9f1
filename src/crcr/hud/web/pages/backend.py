"""The backend page: a backend's figures and its matrix of recent upstream commits by job."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from crcr.hud.web import views
from crcr.hud.web.pages.site import (
    EVENT_CHOICES,
    BadParameter,
    Site,
    event_of,
    href,
    page_number_of,
    window_of,
)

LEGEND = ("success", "failure", "timed_out", "cancelled", "in_progress")


def add_backend_page(router: APIRouter, site: Site) -> None:
    """Serve `<prefix>/<owner>/<repo>`, live; register it last, as it takes any two segments."""

    @router.get(site.prefix + "/{owner}/{repo}", response_class=HTMLResponse)
    async def backend_page(owner: str, repo: str, request: Request) -> HTMLResponse:
        """A backend's figures and its matrix of recent upstream commits by job."""
        params = request.query_params
        try:
            window, number, event = window_of(params), page_number_of(params), event_of(params)
        except BadParameter as problem:
            return site.bad_request(problem)
        full_name = f"{owner}/{repo}"
        fresh, drawn = await site.live(request)
        if drawn is not None:
            return drawn
        result = await site.facade().backend(
            full_name, window, number, site.per_page, event_type=event
        )
        if result is None:
            message = f"No results have been recorded for {full_name}."
            return site.error(404, "Unknown backend", message)
        # The level as the one level source tells it (SPEC §10.2), not as last reported.
        standing = None if site.levels is None else await site.levels().standing(full_name)
        lookup = None if site.budgets is None else site.budgets()
        budget = None if lookup is None else await lookup(full_name)
        path = site.backend_href(full_name)
        culprits = [] if site.culprits is None else await site.culprits(full_name)
        last = result.pagination.pages
        newer = href(path, window=window, event=event, page=number - 1) if number > 1 else None
        older = href(path, window=window, event=event, page=number + 1) if number < last else None
        return site.html(
            "backend.html",
            "",
            live=fresh,
            page=result,
            standing=standing,
            budget=budget,
            headers=views.matrix_headers(result),
            legend=LEGEND,
            window_href=lambda days: href(path, window=days, event=event),
            event=event,
            event_types=EVENT_CHOICES,
            event_href=lambda key: href(path, window=window, event=key),
            newer_href=newer,
            older_href=older,
            pr_href=site.pr_href,
            culprits=culprits,
        )

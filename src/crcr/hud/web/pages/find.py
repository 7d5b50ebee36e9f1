"""The find page: go to the PR, commit or backend a query names, or list the candidates."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from crcr.hud.reads.find import MAX_QUERY, FindMatch
from crcr.hud.web.pages.site import Site


def add_find_page(router: APIRouter, site: Site) -> None:
    """Serve `<prefix>/find?q=...`."""

    def match_href(match: FindMatch) -> str:
        if match.pr_number is not None:
            return site.pr_href(match.pr_number)
        return site.backend_href(match.repo or "")

    @router.get(f"{site.prefix}/find", response_class=HTMLResponse)
    async def find_page(request: Request) -> Response:
        """Go to the PR, commit or backend the query names; list several; say when none."""
        query = request.query_params.get("q", "").strip()[:MAX_QUERY]
        if not query:
            return site.html("find.html", "", 400, find_query="", matches=(), match_href=match_href)
        found = await site.facade().find(query)
        if len(found.matches) == 1:
            return RedirectResponse(match_href(found.matches[0]), status_code=303)
        return site.html(
            "find.html",
            "",
            200 if found.matches else 404,
            find_query=query,
            matches=found.matches,
            match_href=match_href,
        )

"""The dashboard's HTTP routes: read the query facade, shape, render. Nothing else."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from crcr.hud.levels.status import LevelStatusService
from crcr.hud.queries import WINDOW_CHOICES, HudQueries
from crcr.hud.reads.find import MAX_QUERY, FindMatch
from crcr.hud.web import latency, level_views, views
from crcr.hud.web.page_cache import PageCache
from crcr.hud.web.render import ASSET_TYPES, ASSETS, EVENT_NAMES, asset, render

DEFAULT_WINDOW = 7
PER_PAGE = 25
LIVE_SECONDS = 15.0
IMMUTABLE = "public, max-age=31536000, immutable"

QueriesSource = HudQueries | Callable[[], HudQueries]
LevelsSource = Callable[[], LevelStatusService]
EVENT_CHOICES = ((None, "All"), *EVENT_NAMES.items())


class BadParameter(Exception):
    """A query parameter the pages cannot use; the message names it."""


def _window(params: Mapping[str, str]) -> int:
    raw = params.get("window", str(DEFAULT_WINDOW))
    if not raw.isdigit() or int(raw) not in WINDOW_CHOICES:
        choices = ", ".join(str(days) for days in WINDOW_CHOICES)
        raise BadParameter(f"window must be one of {choices} (days), got {raw!r}")
    return int(raw)


def _event(params: Mapping[str, str]) -> str | None:
    raw = params.get("event") or None
    if raw is not None and raw not in EVENT_NAMES:
        raise BadParameter(f"event must be one of {', '.join(EVENT_NAMES)}, got {raw!r}")
    return raw


def _page(params: Mapping[str, str]) -> int:
    raw = params.get("page", "1")
    if not raw.isdigit() or int(raw) < 1:
        raise BadParameter(f"page must be a positive whole number, got {raw!r}")
    return int(raw)


def _today() -> date:
    return datetime.now(UTC).date()


def _href(path: str, **params: object) -> str:
    """A link with the non-default parameters only, so URLs stay short and shareable."""
    defaults = {"window": DEFAULT_WINDOW, "page": 1}
    kept = {k: v for k, v in params.items() if v not in (None, "") and v != defaults.get(k)}
    return f"{path}?{urlencode(kept)}" if kept else path


def pages_router(
    queries: QueriesSource,
    *,
    levels: LevelsSource | None = None,
    upstream_repo: str = "pytorch/pytorch",
    prefix: str = "/crcr",
    per_page: int = PER_PAGE,
    live_seconds: float = LIVE_SECONDS,
) -> APIRouter:
    """Build the dashboard routes under `prefix`.

    `queries` is the HUD's query facade, or a callable returning it when the facade is
    only built at start-up (e.g. `lambda: app.state.hud.queries`); `levels` returns the
    level status service (`lambda: app.state.hud.levels`), without which the pages show
    no levels. The summary, backend and PR pages check for new results every
    `live_seconds` while open (static/live.js).
    """
    # HTML for people, not an API: kept out of /openapi.json.
    router = APIRouter(tags=["hud pages"], include_in_schema=False)

    def facade() -> HudQueries:
        return queries if isinstance(queries, HudQueries) else queries()

    cache = PageCache()

    def page(template: str, section: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        html = render(
            template, prefix=prefix, upstream_repo=upstream_repo, section=section, **context
        )
        if status_code == 200 and context.get("live"):
            cache.put(context["live"]["key"], html)
        return HTMLResponse(html, status_code=status_code)

    def error(status_code: int, heading: str, message: str) -> HTMLResponse:
        return page("error.html", "", status_code, heading=heading, message=message)

    def backend_href(repo: str) -> str:
        return f"{prefix}/{quote(repo)}"

    def pr_href(number: int) -> str:
        return f"{prefix}/pr/{number}"

    async def live(request: Request) -> tuple[dict[str, Any], HTMLResponse | None]:
        """The live page's marker, and its HTML if already drawn at this version and minute."""
        # Read before the page's data: a result written in between is caught next poll.
        version = (await facade().freshness()).version
        key = cache.key(f"{request.url.path}?{request.url.query}", version)
        html = cache.get(key)
        drawn = None if html is None else HTMLResponse(html)
        return {"version": version, "seconds": live_seconds, "key": key}, drawn

    def match_href(match: FindMatch) -> str:
        if match.pr_number is not None:
            return pr_href(match.pr_number)
        return backend_href(match.repo or "")

    @router.get(prefix + "/static/{name}", include_in_schema=False)
    async def static(name: str, request: Request) -> Response:
        if name not in ASSETS:
            return JSONResponse({"detail": f"no static file named {name!r}"}, 404)
        body, version = asset(name)
        # Pages link assets by content hash (`?v=`): that URL's bytes never change.
        current = request.query_params.get("v") == version
        headers = {"Cache-Control": IMMUTABLE if current else "no-cache"}
        media_type = ASSET_TYPES[name[name.rindex(".") :]]
        return Response(body, media_type=media_type, headers=headers)

    @router.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> Response:
        body, _ = asset("favicon.ico")
        headers = {"Cache-Control": "public, max-age=86400"}
        return Response(body, media_type="image/x-icon", headers=headers)

    @router.get(f"{prefix}/find", response_class=HTMLResponse)
    async def find_page(request: Request) -> Response:
        """Go to the PR, commit or backend the query names; list several; say when none."""
        query = request.query_params.get("q", "").strip()[:MAX_QUERY]
        if not query:
            return page("find.html", "", 400, find_query="", matches=(), match_href=match_href)
        found = await facade().find(query)
        if len(found.matches) == 1:
            return RedirectResponse(match_href(found.matches[0]), status_code=303)
        status_code = 200 if found.matches else 404
        return page(
            "find.html",
            "",
            status_code,
            find_query=query,
            matches=found.matches,
            match_href=match_href,
        )

    @router.get(prefix, response_class=HTMLResponse)
    @router.get(f"{prefix}/", response_class=HTMLResponse, include_in_schema=False)
    async def summary_page(request: Request) -> HTMLResponse:
        """Every backend's health, grouped by level, worst first."""
        try:
            window, event = _window(request.query_params), _event(request.query_params)
        except BadParameter as exc:
            return error(400, "Bad request", str(exc))
        fresh, drawn = await live(request)
        if drawn is not None:
            return drawn
        summary = await facade().summary(window, event)
        report = None if levels is None else await levels().report()
        stats = summary.stats
        share = f"{100 * stats.failures / stats.runs:.1f}% of jobs" if stats.runs else "no jobs"
        return page(
            "summary.html",
            "summary",
            live=fresh,
            summary=summary,
            groups=views.group_by_level(summary.backends),
            sparks={row.repo: views.trend_sparkline(row) for row in summary.backends},
            failure_share=share,
            event_label=EVENT_NAMES.get(event or "", ""),
            event_types=EVENT_CHOICES,
            window_href=lambda days: _href(prefix, window=days, event=event),
            event_href=lambda key: _href(prefix, window=window, event=key),
            backend_href=backend_href,
            verdicts={} if report is None else level_views.verdict_badges(report),
        )

    @router.get(f"{prefix}/levels", response_class=HTMLResponse)
    async def levels_page() -> HTMLResponse:
        """Each backend's level, verdict, criteria and level history; demotions apart."""
        if levels is None:
            return error(404, "Not available", "This HUD has no level status.")
        service = levels()
        rows = level_views.level_rows(await service.report())
        return page(
            "levels.html",
            "levels",
            rows=rows,
            demoted=[row for row in rows if row.demotion is not None],
            demotion_days=service.criteria.demotion_window_days,
            promotion_days=service.criteria.promotion_window_days,
            api_href="/api/crcr/level-status",
            backend_href=backend_href,
        )

    @router.get(f"{prefix}/metrics", response_class=HTMLResponse)
    async def metrics_page(request: Request) -> HTMLResponse:
        """Queue and execution time percentiles per backend, day by day."""
        try:
            window = _window(request.query_params)
        except BadParameter as exc:
            return error(400, "Bad request", str(exc))
        points = await facade().latency_percentiles(window)
        return page(
            "metrics.html",
            "metrics",
            window=window,
            panels=latency.latency_panels(points, latency.window_days(window, _today())),
            window_href=lambda days: _href(f"{prefix}/metrics", window=days),
            backend_href=backend_href,
        )

    @router.get(f"{prefix}/nightly", response_class=HTMLResponse)
    async def nightly_page(request: Request) -> HTMLResponse:
        """The latest upstream commit each backend's scheduled runs tested."""
        try:
            window = _window(request.query_params)
        except BadParameter as exc:
            return error(400, "Bad request", str(exc))
        rows = await facade().periodic(window)
        return page(
            "nightly.html",
            "nightly",
            window=window,
            rows=rows,
            window_href=lambda days: _href(f"{prefix}/nightly", window=days),
            backend_href=backend_href,
        )

    @router.get(prefix + "/pr/{number}", response_class=HTMLResponse)
    async def pr_page(number: str, request: Request) -> HTMLResponse:
        """Every backend's jobs for one upstream pull request."""
        if not number.isdigit() or int(number) < 1:
            return error(400, "Bad request", f"PR number must be a positive integer: {number!r}")
        fresh, drawn = await live(request)
        if drawn is not None:
            return drawn
        view = await facade().pr(int(number))
        backends = views.pr_backends(view)
        return page(
            "pr.html",
            "",
            live=fresh,
            view=view,
            backends=backends,
            lead=views.pr_lead_line(backends) if backends else None,
            backend_href=backend_href,
        )

    @router.get(prefix + "/{owner}/{repo}", response_class=HTMLResponse)
    async def backend_page(owner: str, repo: str, request: Request) -> HTMLResponse:
        """A backend's figures and its matrix of recent upstream commits by job."""
        params = request.query_params
        try:
            window, number, event = _window(params), _page(params), _event(params)
        except BadParameter as exc:
            return error(400, "Bad request", str(exc))
        full_name = f"{owner}/{repo}"
        fresh, drawn = await live(request)
        if drawn is not None:
            return drawn
        result = await facade().backend(full_name, window, number, per_page, event_type=event)
        if result is None:
            message = f"No results have been recorded for {full_name}."
            return error(404, "Unknown backend", message)
        path = backend_href(full_name)
        pages = result.pagination
        return page(
            "backend.html",
            "",
            live=fresh,
            page=result,
            headers=views.matrix_headers(result),
            legend=("success", "failure", "timed_out", "cancelled", "in_progress"),
            window_href=lambda days: _href(path, window=days, event=event),
            event=event,
            event_types=EVENT_CHOICES,
            event_href=lambda key: _href(path, window=window, event=key),
            newer_href=_href(path, window=window, event=event, page=number - 1)
            if number > 1
            else None,
            older_href=_href(path, window=window, event=event, page=number + 1)
            if number < pages.pages
            else None,
            pr_href=pr_href,
        )

    return router

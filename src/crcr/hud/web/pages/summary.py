"""The summary page: every backend's health, grouped by level, worst first."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from crcr.hud.web import level_views, views
from crcr.hud.web.pages.site import EVENT_CHOICES, BadParameter, Site, event_of, href, window_of
from crcr.hud.web.render import EVENT_NAMES


def add_summary_page(router: APIRouter, site: Site) -> None:
    """Serve `<prefix>` (and `<prefix>/`), live."""

    @router.get(site.prefix, response_class=HTMLResponse)
    @router.get(f"{site.prefix}/", response_class=HTMLResponse, include_in_schema=False)
    async def summary_page(request: Request) -> HTMLResponse:
        """Every backend's health, grouped by level, worst first."""
        try:
            window, event = window_of(request.query_params), event_of(request.query_params)
        except BadParameter as problem:
            return site.bad_request(problem)
        fresh, drawn = await site.live(request)
        if drawn is not None:
            return drawn
        summary = await site.facade().summary(window, event)
        report = None if site.levels is None else await site.levels().report()
        stats = summary.stats
        share = f"{100 * stats.failures / stats.runs:.1f}% of jobs" if stats.runs else "no jobs"
        return site.html(
            "summary.html",
            "summary",
            live=fresh,
            summary=summary,
            groups=views.group_by_level(summary.backends),
            sparks={row.repo: views.trend_sparkline(row) for row in summary.backends},
            failure_share=share,
            event_label=EVENT_NAMES.get(event or "", ""),
            event_types=EVENT_CHOICES,
            window_href=lambda days: href(site.prefix, window=days, event=event),
            event_href=lambda key: href(site.prefix, window=window, event=key),
            backend_href=site.backend_href,
            verdicts={} if report is None else level_views.verdict_badges(report),
        )

"""What every dashboard page shares: the query facade, rendering, links, query parameters."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import Request
from fastapi.responses import HTMLResponse

from crcr.hud.health.memo import HealthMemo
from crcr.hud.levels.status import LevelStatusService
from crcr.hud.queries import WINDOW_CHOICES, HudQueries
from crcr.hud.web.budget_view import BudgetSource
from crcr.hud.web.page_cache import PageCache
from crcr.hud.web.render import EVENT_NAMES, render

DEFAULT_WINDOW = 7
EVENT_CHOICES = ((None, "All"), *EVENT_NAMES.items())

QueriesSource = HudQueries | Callable[[], HudQueries]
LevelsSource = Callable[[], LevelStatusService]
HealthSource = Callable[[], HealthMemo | None]
CulpritsSource = Callable[[str], Awaitable[list[dict[str, Any]]]]
"""A backend's bisections as the backend page draws them (the relay's, SPEC §14)."""


class BadParameter(Exception):
    """A query parameter the pages cannot use; the message names it."""


def window_of(params: Mapping[str, str]) -> int:
    """The `window` parameter: one of the offered numbers of days."""
    raw = params.get("window", str(DEFAULT_WINDOW))
    if not raw.isdigit() or int(raw) not in WINDOW_CHOICES:
        choices = ", ".join(str(days) for days in WINDOW_CHOICES)
        raise BadParameter(f"window must be one of {choices} (days), got {raw!r}")
    return int(raw)


def event_of(params: Mapping[str, str]) -> str | None:
    """The `event` parameter: an event type the pages name, or None for all."""
    raw = params.get("event") or None
    if raw is not None and raw not in EVENT_NAMES:
        raise BadParameter(f"event must be one of {', '.join(EVENT_NAMES)}, got {raw!r}")
    return raw


def page_number_of(params: Mapping[str, str]) -> int:
    """The `page` parameter: a positive whole number, 1 if absent."""
    raw = params.get("page", "1")
    if not raw.isdigit() or int(raw) < 1:
        raise BadParameter(f"page must be a positive whole number, got {raw!r}")
    return int(raw)


def today() -> date:
    """Today in UTC, the HUD's day."""
    return datetime.now(UTC).date()


def href(path: str, **params: object) -> str:
    """A link with the non-default parameters only, so URLs stay short and shareable."""
    defaults = {"window": DEFAULT_WINDOW, "page": 1}
    kept = {k: v for k, v in params.items() if v not in (None, "") and v != defaults.get(k)}
    return f"{path}?{urlencode(kept)}" if kept else path


@dataclass
class Site:
    """The dashboard as its pages see it: where data comes from and how a page is drawn.

    `queries` is the HUD's query facade, or a callable returning it when the facade is
    only built at start-up; `levels` returns the level status service, None for a HUD
    that shows no levels. Live pages are kept in `cache` for their store version.
    """

    queries: QueriesSource
    levels: LevelsSource | None
    upstream_repo: str
    prefix: str
    per_page: int
    live_seconds: float
    cache: PageCache = field(default_factory=PageCache)
    github_web: str = "https://github.com"
    health: HealthSource | None = None
    """Relay health (SPEC §13), for the health page and every page's header chip."""
    culprits: CulpritsSource | None = None
    budgets: BudgetSource | None = None
    """Capped backends' running / waiting (SPEC §15), for the backend page."""

    def facade(self) -> HudQueries:
        """The query facade (built by now, if it is built at start-up)."""
        queries = self.queries
        return queries if isinstance(queries, HudQueries) else queries()

    def html(
        self, template: str, section: str, status_code: int = 200, **context: Any
    ) -> HTMLResponse:
        """Render `template` in the site's frame; a live page's HTML is kept for reuse."""
        html = render(
            template,
            prefix=self.prefix,
            upstream_repo=self.upstream_repo,
            github_web=self.github_web,
            section=section,
            health_chip=self.health_chip(),
            **context,
        )
        if status_code == 200 and context.get("live"):
            self.cache.put(context["live"]["key"], html)
        return HTMLResponse(html, status_code=status_code)

    def health_chip(self) -> dict[str, str] | None:
        """The header's link to the health page with the last verdict; None without one."""
        memo = None if self.health is None else self.health()
        if memo is None:
            return None
        status = memo.known_status()
        word = {"healthy": "Healthy", "degraded": "Degraded"}.get(str(status), "Health")
        tone = {"healthy": "good", "degraded": "bad"}.get(str(status), "muted")
        return {"href": f"{self.prefix}/health", "word": word, "tone": tone}

    def error(self, status_code: int, heading: str, message: str) -> HTMLResponse:
        """The error page."""
        return self.html("error.html", "", status_code, heading=heading, message=message)

    def bad_request(self, problem: BadParameter) -> HTMLResponse:
        """The error page for a query parameter the page cannot use."""
        return self.error(400, "Bad request", str(problem))

    def backend_href(self, repo: str) -> str:
        """The backend page of `repo`."""
        return f"{self.prefix}/{quote(repo)}"

    def pr_href(self, number: int) -> str:
        """The page of upstream pull request `number`."""
        return f"{self.prefix}/pr/{number}"

    async def live(self, request: Request) -> tuple[dict[str, Any], HTMLResponse | None]:
        """The live page's marker, and its HTML if already drawn at this version and minute."""
        # Read before the page's data: a result written in between is caught next poll.
        version = (await self.facade().freshness()).version
        key = self.cache.key(f"{request.url.path}?{request.url.query}", version)
        html = self.cache.get(key)
        drawn = None if html is None else HTMLResponse(html)
        return {"version": version, "seconds": self.live_seconds, "key": key}, drawn

"""The dashboard's HTTP routes: one module per page under `crcr.hud.web.pages`, composed here."""

from __future__ import annotations

from fastapi import APIRouter

from crcr.hud.web.budget_view import BudgetSource
from crcr.hud.web.pages.alerts import add_alerts_page
from crcr.hud.web.pages.assets import add_assets
from crcr.hud.web.pages.backend import add_backend_page
from crcr.hud.web.pages.find import add_find_page
from crcr.hud.web.pages.health import add_health_page
from crcr.hud.web.pages.latency import add_latency_page
from crcr.hud.web.pages.levels import add_levels_page
from crcr.hud.web.pages.periodic import add_periodic_page
from crcr.hud.web.pages.pr import add_pr_page
from crcr.hud.web.pages.site import (
    CulpritsSource,
    HealthSource,
    LevelsSource,
    QueriesSource,
    Site,
)
from crcr.hud.web.pages.summary import add_summary_page

PER_PAGE = 25
LIVE_SECONDS = 15.0

# In the order routes are matched: the backend page takes any `<prefix>/<a>/<b>`, so it
# comes after the pages whose paths it would otherwise swallow (`pr/<n>`, `static/<f>`).
PAGES = (
    add_assets,
    add_find_page,
    add_summary_page,
    add_levels_page,
    add_health_page,
    add_alerts_page,
    add_latency_page,
    add_periodic_page,
    add_pr_page,
    add_backend_page,
)


def pages_router(
    queries: QueriesSource,
    *,
    levels: LevelsSource | None = None,
    health: HealthSource | None = None,
    culprits: CulpritsSource | None = None,
    budgets: BudgetSource | None = None,
    upstream_repo: str = "pytorch/pytorch",
    prefix: str = "/crcr",
    per_page: int = PER_PAGE,
    live_seconds: float = LIVE_SECONDS,
    github_web: str = "https://github.com",
) -> APIRouter:
    """Build the dashboard routes under `prefix`.

    `queries` is the HUD's query facade, or a callable returning it when the facade is
    only built at start-up (e.g. `lambda: app.state.hud.queries`); `levels` returns the
    level status service (`lambda: app.state.hud.levels`), without which the pages show
    no levels; `health` returns the relay's health memo (SPEC §13), without which
    there is no health page and no header chip. The summary, backend and PR pages
    check for new results every `live_seconds` while open (static/live.js).
    `github_web` is where a pull request's own page lives (the sandbox's PR pages in
    the demo).
    """
    # HTML for people, not an API: kept out of /openapi.json.
    router = APIRouter(tags=["hud pages"], include_in_schema=False)
    site = Site(queries, levels, upstream_repo, prefix, per_page, live_seconds, health=health)
    site.github_web = github_web
    site.culprits = culprits
    site.budgets = budgets  # SPEC §15: a capped backend's running / waiting
    for add_page in PAGES:
        add_page(router, site)
    return router

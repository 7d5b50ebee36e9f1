"""The alerts page (SPEC §13): the last alerts raised, newest first, linked from health.

What `GET /api/crcr/alerts` lists, for people: each change of state of a backend or of
the canary, when, and where to look. Sinks' URLs and the signing secret are never in
the log, so never here either.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from crcr.hud.web.pages.health import STATE_TONES
from crcr.hud.web.pages.site import Site

SHOWN = 50
KIND_NAMES = {"backend_state": "backend", "canary": "canary", "culprit": "culprit"}


def _moment(text: object) -> datetime | None:
    """An alert's `at` as a datetime (None when it is not an ISO time)."""
    try:
        moment = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def alert_rows(alerts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The alerts as the template shows them: kind named, time parsed, tones chosen."""
    rows = []
    for alert in alerts:
        before, after = str(alert.get("from")), str(alert.get("to"))
        rows.append(
            {
                "kind": KIND_NAMES.get(str(alert.get("kind")), str(alert.get("kind"))),
                "repo": str(alert.get("repo")),
                "before": before,
                "after": after,
                "before_tone": STATE_TONES.get(before, "muted"),
                "after_tone": STATE_TONES.get(after, "muted"),
                "at": _moment(alert.get("at")),
            }
        )
    return rows


def add_alerts_page(router: APIRouter, site: Site) -> None:
    """Serve `<prefix>/alerts` (404 on a HUD without the relay's alert log)."""

    @router.get(f"{site.prefix}/alerts", response_class=HTMLResponse)
    async def alerts_page() -> HTMLResponse:
        """The last alerts: what changed state, from what to what, and when."""
        memo = None if site.health is None else site.health()
        if memo is None or memo.alerts is None:
            return site.error(404, "Not available", "Alerts need the relay's own HUD.")
        rows = alert_rows(await memo.alerts(SHOWN))
        return site.html(
            "alerts.html",
            "health",
            rows=rows,
            shown=SHOWN,
            api_href="/api/crcr/alerts",
            health_href=f"{site.prefix}/health",
            backend_href=site.backend_href,
        )

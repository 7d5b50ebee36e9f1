"""The Jinja environment of the dashboard: packaged templates, display filters, the CSS."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from crcr.hud.queries import WINDOW_CHOICES
from crcr.hud.web import display, failures, views

EVENT_NAMES = {
    "pull_request": "Pull requests",
    "push": "Pushes to main",
    "nightly": "Nightly",
    "periodic": "Periodic",
}


@cache
def environment() -> Environment:
    """Build the template environment once; StrictUndefined turns a typo into an error."""
    env = Environment(
        loader=PackageLoader("crcr.hud.web", "templates"),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        rate_tone=display.pass_rate_tone,
        percent=display.percent,
        duration=display.duration,
        ago=display.ago,
        timestamp=display.timestamp,
        short_sha=display.short_sha,
        outcome=display.outcome,
        outcome_tone=display.outcome_tone,
        outcome_icon=display.outcome_icon,
        level_name=lambda level: display.LEVEL_NAMES.get(level or "", "Not on the allowlist"),
        event_name=lambda event: EVENT_NAMES.get(event, event),
        cell_outcome=views.cell_outcome,
        attempt_outcome=views.attempt_outcome,
        cell_tooltip=views.cell_tooltip,
        tests_text=views.tests_text,
        baseline_mark=failures.mark,
        claim=failures.claim,
        confirmation_text=failures.confirmation_text,
    )
    env.globals["windows"] = WINDOW_CHOICES
    env.globals["baseline_marks"] = tuple(failures.MARKS.values())
    return env


ASSET_TYPES = {
    ".css": "text/css",
    ".js": "text/javascript",
    ".svg": "image/svg+xml",
    ".ico": "image/x-icon",
}
# The files under static/ the pages link: nothing else is served.
ASSETS = ("hud.css", "theme.js", "live.js", "favicon.svg", "favicon.ico")


@cache
def asset(name: str) -> tuple[bytes, str]:
    """A static file and a short hash of it, so its URL changes whenever its content does."""
    body = resources.files("crcr.hud.web").joinpath("static", name).read_bytes()
    return body, hashlib.sha256(body).hexdigest()[:12]


def asset_url(prefix: str, name: str) -> str:
    """The versioned URL of a static file, safe to cache for ever (see the static route)."""
    return f"{prefix}/static/{name}?v={asset(name)[1]}"


def render(
    template: str,
    *,
    prefix: str,
    upstream_repo: str,
    section: str,
    live: Mapping[str, object] | None = None,
    **context: Any,
) -> str:
    """Render a page with the chrome every page shares (navigation, CSS, theme, footer).

    `live` marks a page that updates in place: the store version it was read at, which
    the live script compares with `/api/crcr/freshness` (see static/live.js).
    """
    nav = (
        ("summary", "Backends", prefix),
        ("levels", "Levels", f"{prefix}/levels"),
        ("metrics", "Latency", f"{prefix}/metrics"),
        ("nightly", "Nightly", f"{prefix}/nightly"),
    )
    return (
        environment()
        .get_template(template)
        .render(
            base=prefix,
            nav=nav,
            section=section,
            upstream_repo=upstream_repo,
            static_url=asset_url(prefix, "hud.css"),
            theme_script_url=asset_url(prefix, "theme.js"),
            asset_url=functools.partial(asset_url, prefix),
            live=live,
            rendered_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            **context,
        )
    )

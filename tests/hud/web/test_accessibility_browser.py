"""Every HUD page passes the axe-core audit (WCAG 2.1 A/AA and best practices), in both
themes, whether the theme follows the system or was chosen with the toggle.

The HUD holds both known data sets (seed.py and failures_seed.py), so the pages show
every kind of cell, mark, chart and badge; empty states and the error page are audited
too. A page route added to the dashboard fails `test_every_page_route_is_audited` until
it is listed in PAGES.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack

import pytest
from playwright.sync_api import Browser, Page, ViewportSize
from starlette.routing import Match, Route
from tests.hud.web import failures_seed
from tests.hud.web.axe import assert_accessible
from tests.hud.web.harness import DESKTOP, PHONE
from tests.hud.web.theme import THEMES, Theme, open_in_theme

from crcr.hud.web import pages_router

pytestmark = pytest.mark.browser

# (name, path): every page the dashboard serves, with data and empty.
PAGES = (
    ("summary", "/crcr"),
    ("backend", "/crcr/acme/gate"),
    ("backend-failures", f"/crcr/{failures_seed.ROCM}"),
    ("backend-empty", "/crcr/acme/gate?event=push"),
    ("backend-culprit", "/crcr/acme/flaky"),
    ("pr", "/crcr/pr/101"),
    ("pr-failures", f"/crcr/pr/{failures_seed.PR}"),
    ("pr-empty", "/crcr/pr/999"),
    ("levels", "/crcr/levels"),
    ("health", "/crcr/health"),
    ("alerts", "/crcr/alerts"),
    ("latency", "/crcr/metrics"),
    ("nightly", "/crcr/nightly"),
    ("error", "/crcr/nobody/nothing"),
    ("find-none", "/crcr/find?q=no-such-backend-anywhere"),
    ("find-empty", "/crcr/find?q="),
)


@pytest.fixture(scope="module")
def tabs(browser: Browser) -> Iterator[Callable[[Theme, ViewportSize], Page]]:
    """One tab per theme and screen size, reused from page to page (much faster under
    load than a new browser context for every audit)."""
    with ExitStack() as stack:
        opened: dict[tuple[str, int], Page] = {}

        def tab(theme: Theme, viewport: ViewportSize) -> Page:
            key = (theme.name, viewport["width"])
            if key not in opened:
                opened[key] = stack.enter_context(open_in_theme(browser, theme, viewport))
            return opened[key]

        yield tab


@pytest.mark.parametrize(("name", "path"), PAGES, ids=[name for name, _ in PAGES])
@pytest.mark.parametrize("theme", THEMES, ids=lambda t: t.name)
def test_the_page_has_no_accessibility_violations(
    tabs: Callable[[Theme, ViewportSize], Page],
    full_hud_url: str,
    theme: Theme,
    name: str,
    path: str,
) -> None:
    page = tabs(theme, DESKTOP)
    page.goto(full_hud_url + path)
    assert page.evaluate("document.documentElement.dataset.theme") == theme.expected
    assert_accessible(page, f"{name} ({theme.name})")


@pytest.mark.parametrize("name", ["summary", "backend", "pr-failures"])
@pytest.mark.parametrize("theme", THEMES[:2], ids=lambda t: t.name)
def test_the_phone_layout_has_no_accessibility_violations(
    tabs: Callable[[Theme, ViewportSize], Page], full_hud_url: str, theme: Theme, name: str
) -> None:
    page = tabs(theme, PHONE)
    page.goto(full_hud_url + dict(PAGES)[name])
    assert_accessible(page, f"{name} on a phone ({theme.name})")


def test_every_page_route_is_audited() -> None:
    """A new page must be added to PAGES: the audit covers every route, not a sample."""
    routes = [
        route
        for route in pages_router(lambda: None).routes  # type: ignore[arg-type, return-value]
        if isinstance(route, Route)
        and not route.path.endswith("/")  # an alias of the path without the slash
        and "/static/" not in route.path
        and route.path != "/favicon.ico"
    ]
    assert len(routes) >= 7  # the filter above must not leave the check vacuous
    for route in routes:
        audited = [
            path
            for _, path in PAGES
            if route.matches({"type": "http", "path": path.split("?")[0], "method": "GET"})[0]
            is Match.FULL
        ]
        assert audited, f"{route.path} is not audited: add a page using it to PAGES"


def test_keyboard_focus_is_visible_on_every_control(page: Page, full_hud_url: str) -> None:
    """Tabbing through a page lands on each link and control with a visible outline."""
    page.goto(f"{full_hud_url}/crcr/acme/gate")
    seen = 0
    for _ in range(40):
        page.keyboard.press("Tab")
        focused = page.evaluate(
            """() => {
                const el = document.activeElement;
                const style = getComputedStyle(el);
                return {tag: el.tagName, outline: style.outlineStyle,
                        width: parseFloat(style.outlineWidth)};
            }"""
        )
        if focused["tag"] == "BODY":
            break
        assert focused["outline"] != "none" and focused["width"] >= 2, focused
        seen += 1
    assert seen >= 20, f"only {seen} elements were reachable with Tab"

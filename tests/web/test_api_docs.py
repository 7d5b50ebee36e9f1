"""`/docs` works offline: Swagger UI comes from crcr itself, and nothing from elsewhere."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import sync_playwright
from tests.browser import CHROMIUM, CHROMIUM_ARGS, require_chromium
from tests.hud.web.harness import LiveServer

from crcr.app import create_app
from crcr.config.settings import load_settings
from crcr.hud.component import create_hud_app
from crcr.web.api_docs import ASSETS


async def get(app: object, path: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://relay") as client:
        return await client.get(path)


@pytest.mark.parametrize("build", [create_app, create_hud_app])
async def test_the_docs_page_refers_only_to_its_own_server(build: object, tmp_path: Path) -> None:
    app = build(load_settings(data_dir=tmp_path, public_docs=True))  # type: ignore[operator]

    page = await get(app, "/docs")
    assets = re.findall(r"""(?:src|href)=["']([^"']+)""", page.text)
    script = await get(app, "/docs/static/swagger-ui-bundle.js")
    style = await get(app, "/docs/static/swagger-ui.css")

    assert page.status_code == 200
    assert assets and all(not urlsplit(url).netloc for url in assets), assets
    assert "https://" not in page.text
    assert script.status_code == 200 and "SwaggerUIBundle" in script.text
    assert style.status_code == 200 and style.headers["content-type"].startswith("text/css")
    assert (await get(app, "/docs/static/LICENSE")).status_code == 404  # only the two assets


def test_the_vendored_assets_carry_their_version_and_licence() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+\n", (ASSETS / "VERSION").read_text())
    assert "Apache License" in (ASSETS / "LICENSE").read_text()


@pytest.mark.browser
def test_the_docs_render_in_chromium_with_no_request_leaving_the_host(tmp_path: Path) -> None:
    require_chromium()
    app = create_app(load_settings(data_dir=tmp_path, public_docs=True), background=False)
    requested: list[str] = []
    with LiveServer(app) as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.on("request", lambda request: requested.append(request.url))
            page.goto(f"{server.url}/docs")
            page.wait_for_selector(".opblock-summary-path", timeout=30_000)
            operations = page.locator(".opblock-summary-path").all_inner_texts()
        finally:
            browser.close()

    foreign = [url for url in requested if not url.startswith(server.url)]
    assert foreign == []
    assert {"/github/callback", "/github/webhook", "/api/crcr/results"} <= {
        text.strip() for text in operations
    }

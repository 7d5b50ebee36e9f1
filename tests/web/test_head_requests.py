"""HEAD is answered wherever GET is (uptime checks, `curl -I`), with GET's headers and no body."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute
from tests.hud.web import seed
from tests.hud.web.harness import asgi_client

from crcr.app import create_app
from crcr.config.settings import Settings, load_settings

PAGES = ["/crcr", "/crcr/acme/gate", "/crcr/pr/101", "/crcr/levels", "/api/crcr/summary"]


@pytest.fixture
async def hud(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    async with asgi_client(tmp_path / "hud.db", seed.RESULTS[:4]) as http:
        yield http


@pytest.fixture
async def relay(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """The relay app (no in-process HUD) over a runtime whose stores answer."""

    async def runtime(settings: Settings) -> Any:
        async def ping() -> None:
            return None

        async def close() -> None:
            return None

        async def audit_entries(repo: str, *, limit: int) -> list[dict[str, Any]]:
            return []  # no alert raised yet (`/api/crcr/alerts`)

        async def bisections() -> dict[str, Any]:
            return {}  # no culprit search yet (`/api/crcr/culprits`)

        store = SimpleNamespace(ping=ping, audit_entries=audit_entries, bisections=bisections)
        return SimpleNamespace(store=store, hud=None, close=close)

    settings = load_settings(data_dir=tmp_path, hud_url="https://hud.example/api/crcr/results")
    app = create_app(settings, runtime=runtime, background=False)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://relay") as client:
            client.app = app  # type: ignore[attr-defined]
            yield client


def assert_head_mirrors_get(head: httpx.Response, get: httpx.Response) -> None:
    assert head.status_code == get.status_code == 200
    assert head.content == b""
    assert head.headers["content-type"] == get.headers["content-type"]
    assert head.headers["content-length"] == get.headers["content-length"]
    assert head.headers["etag"] == get.headers["etag"]


@pytest.mark.parametrize("path", PAGES)
async def test_every_page_answers_head_as_its_get(hud: httpx.AsyncClient, path: str) -> None:
    get = await hud.get(path)
    head = await hud.head(path)

    assert_head_mirrors_get(head, get)


async def test_the_probes_answer_head(relay: httpx.AsyncClient) -> None:
    for path in ("/healthz", "/readyz"):
        assert_head_mirrors_get(await relay.head(path), await relay.get(path))


async def test_every_get_route_without_parameters_answers_head(relay: httpx.AsyncClient) -> None:
    app = relay.app  # type: ignore[attr-defined]
    paths = [
        route.path
        for route in app.routes
        if isinstance(route, APIRoute) and "GET" in route.methods and "{" not in route.path
    ]
    assert "/metrics" in paths

    answers = {path: (await relay.head(path)).status_code for path in paths}

    assert set(answers.values()) == {200}, answers


async def test_a_path_without_get_still_answers_405(relay: httpx.AsyncClient) -> None:
    head = await relay.head("/github/webhook")

    assert head.status_code == 405
    assert "POST" in head.headers["allow"]
    assert head.content == b""

"""Every response of the relay app and the HUD app carries the browser protections."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from crcr.app import create_app
from crcr.config.settings import load_settings
from crcr.hud.component import create_hud_app


def apps(tmp_path: Path) -> list[FastAPI]:
    settings = load_settings(data_dir=tmp_path, public_docs=True)
    return [create_app(settings, background=False), create_hud_app(settings)]


async def get(app: FastAPI, path: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://hud") as client:
        return await client.get(path)


@pytest.mark.parametrize("path", ["/healthz", "/crcr/static/hud.css", "/no/such/page"])
async def test_pages_forbid_inline_script_sniffing_and_framing(tmp_path: Path, path: str) -> None:
    for app in apps(tmp_path):
        headers = (await get(app, path)).headers

        policy = headers["content-security-policy"]
        assert "script-src 'self';" in policy
        assert "frame-ancestors 'none'" in policy
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["x-frame-options"] == "DENY"
        assert headers["referrer-policy"] == "strict-origin-when-cross-origin"


async def test_the_interactive_docs_may_run_their_bootstrap_and_nothing_foreign(
    tmp_path: Path,
) -> None:
    for app in apps(tmp_path):
        response = await get(app, "/docs")

        assert response.status_code == 200
        policy = response.headers["content-security-policy"]
        assert "script-src 'self' 'unsafe-inline';" in policy
        assert "https:" not in policy
        assert "frame-ancestors 'none'" in policy


async def test_the_docs_are_served_only_when_the_operator_asks(tmp_path: Path) -> None:
    closed = load_settings(data_dir=tmp_path)
    for app in (create_app(closed, background=False), create_hud_app(closed)):
        for path in ("/docs", "/redoc", "/openapi.json"):
            assert (await get(app, path)).status_code == 404
    for app in apps(tmp_path):
        assert (await get(app, "/openapi.json")).status_code == 200
        assert (await get(app, "/redoc")).status_code == 404  # ReDoc comes from a CDN only

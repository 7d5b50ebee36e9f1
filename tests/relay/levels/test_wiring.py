"""Where the relay reads the verdicts, and when it can propose changes, per the settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from crcr.config.settings import load_settings
from crcr.relay.allowlist.location import FileLocation, GitHubBlobLocation
from crcr.relay.levels.wiring import level_sync, status_source

DOCUMENT: dict[str, Any] = {"generated_at": "2026-11-25T10:00:00Z", "repos": []}


async def test_with_an_external_hud_the_status_is_read_beside_its_ingestion_url() -> None:
    asked: list[str] = []

    async def status(request: Request) -> JSONResponse:
        asked.append(str(request.url))
        return JSONResponse(DOCUMENT)

    hud = Starlette(routes=[Route("/hud/api/crcr/level-status", status)])
    settings = load_settings(hud_url="https://hud.example.org/hud/api/crcr/results")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=hud)) as http:

        async def in_process() -> dict[str, Any]:
            raise AssertionError("the in-process HUD is not asked when CRCR_HUD_URL is set")

        fetch = status_source(settings, http, in_process)
        assert await fetch() == DOCUMENT
    assert asked == ["https://hud.example.org/hud/api/crcr/level-status"]


async def test_without_one_the_in_process_hud_answers() -> None:
    async def in_process() -> dict[str, Any]:
        return DOCUMENT

    async with httpx.AsyncClient() as http:
        assert status_source(load_settings(), http, in_process) is in_process


def test_only_an_allowlist_in_a_github_repository_gets_pull_requests(tmp_path: Path) -> None:
    blob = GitHubBlobLocation("pytorch/pytorch", "main", ".github/crcr-allowlist.yml")
    github: Any = object()  # not called while wiring
    assert level_sync(github, FileLocation(tmp_path / "allowlist.yml"), None) is None
    assert level_sync(github, blob, None) is not None

"""The HUD's level status is read and checked before the relay acts on it."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from crcr.relay.allowlist.model import Level
from crcr.relay.levels.status import (
    Criterion,
    LevelStatusError,
    http_level_status,
    level_status_url,
    parse_level_status,
)

DOCUMENT: dict[str, Any] = {
    "generated_at": "2026-11-25T10:00:00Z",
    "repos": [
        {
            "repo": "Org/XPU",
            "level": "L3",
            "change": "demote",
            "noData": False,
            "windowDays": 7,
            "criteria": [
                {"criterion": "job_pass_rate", "measured": 80, "target": "≥ 90%", "met": False}
            ],
            "demoted": None,
        },
        {"repo": "org/one", "level": "L1", "change": None, "noData": True, "windowDays": 7,
         "criteria": [], "demoted": None},
    ],
}  # fmt: skip


def test_the_document_becomes_one_status_per_backend() -> None:
    statuses = parse_level_status(DOCUMENT)
    xpu = statuses["org/xpu"]
    assert (xpu.repo, xpu.level, xpu.change, xpu.window_days) == ("Org/XPU", Level.L3, "demote", 7)
    assert xpu.criteria == (Criterion("job_pass_rate", 80.0, "≥ 90%", False),)
    assert statuses["org/one"].no_data


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"repos": {}}, "`repos`"),
        ({"repos": [{"repo": "x", "level": "L3"}]}, r"repos\[0\].repo"),
        ({"repos": [{"repo": "o/r", "level": "L9"}]}, r"repos\[0\].level"),
        ({"repos": [{"repo": "o/r", "level": "L3", "change": "up"}]}, r"repos\[0\].change"),
        (
            {"repos": [{"repo": "o/r", "level": "L3", "criteria": [{"criterion": 1}]}]},
            r"repos\[0\].criteria\[0\]",
        ),
    ],
)
def test_a_malformed_document_is_refused_naming_the_field(
    change: dict[str, Any], field: str
) -> None:
    with pytest.raises(LevelStatusError, match=field):
        parse_level_status(change)


def test_the_status_url_comes_from_the_ingestion_url_without_credentials() -> None:
    assert level_status_url("https://hud.example.org/api/crcr/results") == (
        "https://hud.example.org/api/crcr/level-status"
    )
    assert level_status_url("https://u:p@hud.example.org:8443/hud/api/crcr/results/") == (
        "https://hud.example.org:8443/hud/api/crcr/level-status"
    )
    assert level_status_url("https://hud.example.org/ingest") == (
        "https://hud.example.org/api/crcr/level-status"
    )


async def test_an_external_hud_is_read_over_http() -> None:
    async def status(request: object) -> JSONResponse:
        return JSONResponse(DOCUMENT)

    async def broken(request: object) -> JSONResponse:
        return JSONResponse({"detail": "down"}, status_code=503)

    app = Starlette(
        routes=[
            Route("/api/crcr/level-status", status),
            Route("/broken/api/crcr/level-status", broken),
        ]
    )
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as http:
        fetch = http_level_status(http, "http://hud/api/crcr/level-status", timeout=1)
        assert await fetch() == DOCUMENT
        failing = http_level_status(http, "http://hud/broken/api/crcr/level-status", timeout=1)
        with pytest.raises(LevelStatusError, match="HTTP 503"):
            await failing()

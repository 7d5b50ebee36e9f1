"""`/readyz` names the store that does not answer, and nothing about why."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import httpx
import pytest

from crcr.config.settings import load_settings
from crcr.hud.component import create_hud_app
from crcr.stores.state import StateStoreUnavailable
from crcr.web.readiness import readiness


async def test_every_store_answering_is_ready() -> None:
    async def up() -> None:
        return None

    response = await readiness({"state store": up, "results store": up})

    assert (response.status_code, json.loads(response.body)) == (200, {"status": "ok"})


async def test_the_first_store_not_answering_is_named_and_its_error_only_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def up() -> None:
        return None

    async def down() -> None:
        raise StateStoreUnavailable("redis://cache-internal:6379 refused")

    with caplog.at_level(logging.WARNING, logger="crcr.web.readiness"):
        response = await readiness({"results store": up, "state store": down})

    assert response.status_code == 503
    assert json.loads(response.body) == {"detail": "not ready: state store unavailable"}
    assert "cache-internal" in caplog.text


async def test_the_hud_alone_is_ready_when_its_results_store_answers(tmp_path: Path) -> None:
    app = create_hud_app(load_settings(data_dir=tmp_path))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://hud") as client:
            response = await client.get("/readyz")

    assert (response.status_code, response.json()) == (200, {"status": "ok"})

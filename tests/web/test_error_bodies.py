"""Every error body has one shape: {"detail"} plus optional field, request_id, errors."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from crcr.config.settings import load_settings
from crcr.hud.component import create_hud_app
from crcr.relay.webhook.endpoint import WebhookDeps, webhook_router
from crcr.web.error_bodies import error_body, field_of, install_error_handlers

ALLOWED_KEYS = {"detail", "field", "request_id", "errors"}


def assert_error_shape(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert isinstance(body, dict) and set(body) <= ALLOWED_KEYS, body
    assert isinstance(body["detail"], str) and body["detail"]
    return body


def client(app: FastAPI) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    return httpx.AsyncClient(transport=transport, base_url="http://crcr")


def test_a_message_naming_its_field_first_gives_the_field() -> None:
    assert error_body("workflow.run_id: required") == {
        "detail": "workflow.run_id: required",
        "field": "workflow.run_id",
    }
    assert field_of("rate limit exceeded") is None
    assert error_body("internal error", request_id="r1") == {
        "detail": "internal error",
        "request_id": "r1",
    }


async def test_the_hud_api_answers_every_error_in_the_shape(tmp_path: Path) -> None:
    app = create_hud_app(load_settings(data_dir=tmp_path, hud_token="t0ken"))
    async with app.router.lifespan_context(app), client(app) as hud:
        assert_error_shape(await hud.get("/no/such/path"), 404)
        assert_error_shape(await hud.delete("/healthz"), 405)
        assert_error_shape(await hud.get("/api/crcr/backends/org/none"), 404)
        assert_error_shape(await hud.post("/api/crcr/results", content=b"{}"), 401)
        invalid = assert_error_shape(await hud.get("/api/crcr/summary?days=many"), 422)

    assert invalid["field"] == "days"
    assert invalid["detail"].startswith("days: ")
    assert invalid["errors"][0]["loc"] == ["query", "days"]
    assert "input" not in invalid["errors"][0]  # what the client sent is not echoed


async def test_the_webhook_refusals_are_in_the_shape() -> None:
    app = FastAPI()
    deps = WebhookDeps(
        secret=b"webhook-secret",
        upstream_repo="pytorch/pytorch",
        push_branches=[],
        record_ttl=60,
        allowlist=None,  # type: ignore[arg-type]  # not reached: the signature fails first
        fanout=None,  # type: ignore[arg-type]
        flags=None,  # type: ignore[arg-type]
    )
    app.include_router(webhook_router(lambda: deps))
    headers = {"x-github-event": "push", "x-github-delivery": "d-1"}
    async with client(app) as relay:
        unsigned = await relay.post("/github/webhook", content=b"{}", headers=headers)
        wrong = await relay.post(
            "/github/webhook",
            content=b"{}",
            headers={**headers, "x-hub-signature-256": "sha256=" + "0" * 64},
        )

    assert "Signature" in assert_error_shape(unsigned, 400)["detail"]
    assert_error_shape(wrong, 401)


async def test_an_unexpected_500_carries_the_request_id_of_its_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = FastAPI()
    install_error_handlers(app)

    @app.get("/boom")
    async def boom() -> None:
        raise RuntimeError("secret-ish internals")

    with caplog.at_level(logging.ERROR, logger="crcr.web.error_bodies"):
        async with client(app) as relay:
            response = await relay.get("/boom")

    body = assert_error_shape(response, 500)
    assert body["detail"] == "internal error"
    assert "secret-ish" not in response.text
    [record] = [r for r in caplog.records if r.name == "crcr.web.error_bodies"]
    assert record.request_id == body["request_id"]

"""With no valid allowlist in force, webhooks and callbacks answer 503 with its error.

SPEC §3: an allowlist the relay cannot accept at start, with no earlier valid one,
makes webhooks and callbacks answer 503 with the allowlist's own message (never a 500)
and `/readyz` not ready. Issue 33 item 26: every webhook answered 500 "internal error".
"""

from __future__ import annotations

import dataclasses
import json
import logging
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import Relay, StoreOpener, callback_body, sandbox_github_client

from crcr.app import create_app
from crcr.config.settings import load_settings
from crcr.relay.allowlist.model import Allowlist
from crcr.relay.allowlist.source import AllowlistUnavailable
from crcr.relay.callback.endpoint import callback_router
from crcr.relay.webhook.signature import sign_body
from crcr.runtime import Runtime, open_runtime
from crcr.sandbox.github_state import SandboxGitHub

opener, signing_key, issuer, relay = (
    harness.opener,
    harness.signing_key,
    harness.issuer,
    harness.relay,
)
SECRET = "webhook-secret-for-tests"
BROKEN = "L2:\n  - not-a-repo-name\n"
FIXTURES = Path(__file__).parents[1] / "fixtures" / "webhooks"


@pytest.fixture
async def broken_relay(
    tmp_path: Path, opener: StoreOpener
) -> AsyncIterator[tuple[httpx.AsyncClient, Runtime]]:
    """The real app, started on an allowlist file it cannot accept."""
    allowlist = tmp_path / "allowlist.yaml"
    allowlist.write_text(BROKEN)
    sandbox = SandboxGitHub()
    settings = load_settings(
        webhook_secret=SECRET,
        github_app_id=str(sandbox.app.app_id),
        github_app_private_key=sandbox.app.private_key_pem,
        github_api_url=harness.SANDBOX_API,
        allowlist=str(allowlist),
        data_dir=tmp_path / "data",
        github_timeout=0.5,
    )
    store = await opener.open()
    github = sandbox_github_client(sandbox, store)

    async def bound_runtime(s: Any) -> Runtime:
        return await open_runtime(s, store=store, github=github)

    app = create_app(settings, runtime=bound_runtime, background=False)
    try:
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://relay"
            ) as client,
        ):
            yield client, app.state.runtime
    finally:
        await github.aclose()
        await store.close()


async def test_a_webhook_is_answered_503_with_the_allowlists_error(
    broken_relay: tuple[httpx.AsyncClient, Runtime], caplog: pytest.LogCaptureFixture
) -> None:
    client, _ = broken_relay
    body = (FIXTURES / "pull_request_opened.json").read_bytes()
    headers = {
        "X-GitHub-Event": "pull_request",
        "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-Hub-Signature-256": sign_body(SECRET.encode(), body),
    }

    with caplog.at_level(logging.INFO):
        response = await client.post("/github/webhook", content=body, headers=headers)

    assert response.status_code == 503, response.text
    assert "no valid allowlist" in response.json()["detail"]
    assert "L2" in response.json()["detail"]
    assert response.headers["retry-after"]
    assert "webhook failed" not in caplog.text


async def test_readyz_says_not_ready(broken_relay: tuple[httpx.AsyncClient, Runtime]) -> None:
    client, _ = broken_relay

    response = await client.get("/readyz")

    assert response.status_code == 503
    assert response.json() == {"detail": "not ready: allowlist unavailable"}


async def test_a_callback_is_answered_503_with_the_allowlists_error(relay: Relay) -> None:
    async def unavailable() -> Allowlist:
        raise AllowlistUnavailable("no valid allowlist has been loaded and x failed: L2[0]: bad")

    deps = dataclasses.replace(relay.deps, allowlist=unavailable)
    app = FastAPI()
    app.include_router(callback_router(deps))
    await relay.dispatch("d-1")
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://relay"
    ) as client:
        response = await client.post(
            "/github/callback",
            content=json.dumps(callback_body("d-1")).encode(),
            headers={"authorization": f"Bearer {relay.token()}"},
        )

    assert response.status_code == 503, response.text
    assert response.json()["detail"].endswith("L2[0]: bad")
    assert response.headers["retry-after"]
    assert relay.hud.writes == 0

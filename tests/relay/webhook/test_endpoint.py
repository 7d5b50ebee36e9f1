"""`POST /github/webhook` end to end: the real app, real stores, the sandbox as GitHub.

Scenarios read as SPEC §4 does: a signed event arrives → every allowlisted repo gets
exactly one dispatch → failures are retried from a durable queue until they succeed or
fail for good.
"""

from __future__ import annotations

import copy
import json
import logging
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from prometheus_client.parser import text_string_to_metric_families
from tests.asgi_cut import post_then_vanish
from tests.relay import callback_harness
from tests.relay.callback_harness import SANDBOX_API, StoreOpener, sandbox_github_client

from crcr.app import create_app
from crcr.config.settings import load_settings
from crcr.relay.webhook.client_payload import GITHUB_CLIENT_PAYLOAD_LIMIT, encoded_size
from crcr.relay.webhook.endpoint import webhook_router
from crcr.relay.webhook.signature import sign_body
from crcr.runtime import Runtime, open_runtime
from crcr.sandbox.github_state import SandboxGitHub

FIXTURES = Path(__file__).parents[2] / "fixtures" / "webhooks"
SECRET = "webhook-secret-for-tests"
SANDBOX = SANDBOX_API
ALLOWLIST = """
L1:
  - org/notify
L2:
  - org/report
L3:
  xpu:
    org/xpu-backend: [oncall1]
L4:
  - org/critical: oncall2
"""
DOWNSTREAMS = ("org/notify", "org/report", "org/xpu-backend", "org/critical")
opener = callback_harness.opener


def fixture(name: str) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return payload


class Relay:
    """One running relay app and a client that signs what it sends."""

    def __init__(self, client: httpx.AsyncClient, runtime: Runtime) -> None:
        self.client = client
        self.runtime = runtime

    async def send(
        self,
        event: str,
        payload: dict[str, Any],
        *,
        delivery: str | None = None,
        signature: str | None = None,
    ) -> httpx.Response:
        body = json.dumps(payload).encode()
        headers = {
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
            "X-Hub-Signature-256": signature or sign_body(SECRET.encode(), body),
            "Content-Type": "application/json",
        }
        return await self.client.post("/github/webhook", content=body, headers=headers)


OpenRelay = Callable[[], AbstractAsyncContextManager[Relay]]


@pytest.fixture
def sandbox() -> SandboxGitHub:
    github = SandboxGitHub()
    github.install_app(*DOWNSTREAMS)
    return github


@pytest.fixture
def open_relay(tmp_path: Path, sandbox: SandboxGitHub, opener: StoreOpener) -> OpenRelay:
    allowlist = tmp_path / "allowlist.yaml"
    allowlist.write_text(ALLOWLIST)
    settings = load_settings(
        webhook_secret=SECRET,
        github_app_id=str(sandbox.app.app_id),
        github_app_private_key=sandbox.app.private_key_pem,
        github_api_url=SANDBOX,
        allowlist=str(allowlist),
        data_dir=tmp_path / "data",
        github_timeout=0.5,
    )

    @asynccontextmanager
    async def running() -> AsyncIterator[Relay]:
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
                yield Relay(client, app.state.runtime)
        finally:
            await github.aclose()
            await store.close()

    return running


@pytest.fixture
async def relay(open_relay: OpenRelay) -> AsyncIterator[Relay]:
    async with open_relay() as running:
        yield running


def dispatched_to(sandbox: SandboxGitHub) -> list[str]:
    return sorted(d.repo for d in sandbox.dispatches())


# --- signature, size and routing --------------------------------------------------


async def test_an_unsigned_delivery_is_a_bad_request(relay: Relay) -> None:
    response = await relay.client.post(
        "/github/webhook",
        content=b"{}",
        headers={"X-GitHub-Event": "push", "X-GitHub-Delivery": "d"},
    )
    assert response.status_code == 400
    assert "X-Hub-Signature-256" in response.json()["detail"]


async def test_a_wrongly_signed_delivery_is_unauthorised(
    relay: Relay, sandbox: SandboxGitHub
) -> None:
    response = await relay.send(
        "pull_request", fixture("pull_request_opened.json"), signature="sha256=" + "0" * 64
    )
    assert response.status_code == 401
    assert sandbox.dispatches() == []


async def test_a_body_over_githubs_25_mb_cap_is_refused(relay: Relay) -> None:
    body = b"x" * (25 * 1024 * 1024 + 1)
    response = await relay.client.post(
        "/github/webhook",
        content=body,
        headers={
            "X-GitHub-Event": "push",
            "X-GitHub-Delivery": "d",
            "X-Hub-Signature-256": "sha256=" + "0" * 64,
        },
    )
    assert response.status_code == 413


async def post_signed(relay: Relay, body: bytes) -> httpx.Response:
    """A correctly signed `push` delivery of `body` as it is, JSON or not."""
    headers = {
        "X-GitHub-Event": "push",
        "X-GitHub-Delivery": "d",
        "X-Hub-Signature-256": sign_body(SECRET.encode(), body),
    }
    return await relay.client.post("/github/webhook", content=body, headers=headers)


async def test_a_signed_body_that_is_not_json_is_a_bad_request(relay: Relay) -> None:
    response = await post_signed(relay, b"not json")
    assert response.status_code == 400
    assert "JSON" in response.json()["detail"]


async def test_a_signed_body_nested_too_deeply_is_a_bad_request(relay: Relay) -> None:
    body = b'{"action": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    response = await post_signed(relay, body)
    assert response.status_code == 400
    assert response.json()["detail"] == "body is nested deeper than 1024 levels"


@pytest.mark.parametrize("event", ["issues", "workflow_run", "ping"])
async def test_other_events_are_ignored(relay: Relay, sandbox: SandboxGitHub, event: str) -> None:
    response = await relay.send(event, fixture("pull_request_opened.json"))
    assert response.status_code == 200
    assert response.json()["ignored"] is True
    assert sandbox.dispatches() == []


async def test_events_of_another_repository_are_ignored(
    relay: Relay, sandbox: SandboxGitHub
) -> None:
    payload = fixture("pull_request_opened.json")
    payload["repository"]["full_name"] = "someone/fork"
    response = await relay.send("pull_request", payload)
    assert response.json()["ignored"] is True
    assert sandbox.dispatches() == []


# --- fan-out ----------------------------------------------------------------------


async def test_an_opened_pr_reaches_every_downstream_once(
    relay: Relay, sandbox: SandboxGitHub
) -> None:
    payload = fixture("pull_request_opened.json")
    response = await relay.send("pull_request", payload, delivery="delivery-1")

    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is True
    assert sorted(body["dispatched"]) == sorted(DOWNSTREAMS)
    assert body["failed"] == []
    assert dispatched_to(sandbox) == sorted(DOWNSTREAMS)
    sent = sandbox.dispatches("org/critical")[0]
    assert sent.event_type == "pull_request"
    assert sent.client_payload == {
        "event_type": "pull_request",
        "delivery_id": "delivery-1",
        "payload": payload,
    }
    record = await relay.runtime.store.get_dispatch("delivery-1", "org/critical")
    assert record is not None
    assert record["status"] == "DISPATCHED"
    assert record["context"]["head_sha"] == payload["pull_request"]["head"]["sha"]
    assert record["context"]["pr_number"] == payload["number"]


async def test_a_redelivered_webhook_dispatches_nothing_new(
    relay: Relay, sandbox: SandboxGitHub
) -> None:
    payload = fixture("pull_request_opened.json")
    await relay.send("pull_request", payload, delivery="same-delivery")
    again = await relay.send("pull_request", payload, delivery="same-delivery")

    assert again.status_code == 200
    assert sorted(again.json()["duplicate"]) == sorted(DOWNSTREAMS)
    assert again.json()["dispatched"] == []
    assert len(sandbox.dispatches()) == len(DOWNSTREAMS)


async def test_a_push_to_main_is_dispatched_and_a_tag_push_is_not(
    relay: Relay, sandbox: SandboxGitHub
) -> None:
    push = fixture("push_main.json")
    assert (await relay.send("push", push)).json()["dispatched"]
    tag = copy.deepcopy(push)
    tag["ref"] = "refs/tags/v9.9.9"
    assert (await relay.send("push", tag)).json()["ignored"] is True
    assert len(sandbox.dispatches()) == len(DOWNSTREAMS)


async def test_a_closed_pr_is_dispatched_so_downstream_can_cancel(
    relay: Relay, sandbox: SandboxGitHub
) -> None:
    payload = fixture("pull_request_opened.json")
    payload["action"] = "closed"
    response = await relay.send("pull_request", payload)
    assert sorted(response.json()["dispatched"]) == sorted(DOWNSTREAMS)


async def test_a_pr_payload_over_githubs_limit_is_trimmed_and_still_valid(
    relay: Relay, sandbox: SandboxGitHub
) -> None:
    payload = fixture("pull_request_opened.json")
    payload["pull_request"]["body"] = "A long description. " * 5_000
    assert encoded_size(payload) > GITHUB_CLIENT_PAYLOAD_LIMIT

    response = await relay.send("pull_request", payload, delivery="big")

    assert response.json()["trimmed"] is True
    sent = sandbox.dispatches("org/report")[0].client_payload
    assert encoded_size(sent) <= GITHUB_CLIENT_PAYLOAD_LIMIT
    assert sent["payload"]["pull_request"]["head"]["sha"] == payload["pull_request"]["head"]["sha"]
    assert sent["payload"]["number"] == payload["number"]
    record = await relay.runtime.store.get_dispatch("big", "org/report")
    assert record is not None and record["trimmed"] is True


async def test_a_device_label_is_recorded_for_that_devices_l3_backends(
    relay: Relay, sandbox: SandboxGitHub
) -> None:
    payload = fixture("pull_request_labeled.json")
    payload["label"]["name"] = "ciflow/crcr/xpu"
    response = await relay.send("pull_request", payload)

    assert response.status_code == 200
    assert response.json()["recorded"] == ["org/xpu-backend"]
    head_sha = payload["pull_request"]["head"]["sha"]
    assert await relay.runtime.store.has_flag("checks-wanted", head_sha, "org/xpu-backend")
    assert not await relay.runtime.store.has_flag("checks-wanted", head_sha, "org/critical")
    assert sandbox.dispatches() == []


# --- failures: retried, queued, reported, never lost --------------------------------


async def test_faults_end_with_one_dispatch_per_deliverable_repo(
    relay: Relay, sandbox: SandboxGitHub, caplog: pytest.LogCaptureFixture
) -> None:
    sandbox.inject_fault("*/dispatches", repo="org/report", status=502, times=3)
    sandbox.inject_fault("*/dispatches", repo="org/xpu-backend", hang=5.0, times=3)
    sandbox.uninstall_app("org/notify")

    response = await relay.send("pull_request", fixture("pull_request_opened.json"), delivery="f")

    body = response.json()
    assert response.status_code == 200
    assert body["dispatched"] == ["org/critical"]
    results = {item["repo"]: item["result"] for item in body["failed"]}
    assert results == {"org/report": "queued", "org/xpu-backend": "queued", "org/notify": "failed"}
    notify = await relay.runtime.store.get_dispatch("f", "org/notify")
    assert notify is not None and notify["status"] == "failed"
    logged = {(r.__dict__.get("delivery_id"), r.__dict__.get("repo")) for r in caplog.records}
    assert {("f", "org/report"), ("f", "org/notify")} <= logged
    assert not any("ghs_" in r.getMessage() for r in caplog.records)

    report = await relay.runtime.sweeper.sweep_once()

    assert report.handled["dispatch"] == {"done": 2}
    assert dispatched_to(sandbox) == ["org/critical", "org/report", "org/xpu-backend"]
    for repo in ("org/report", "org/xpu-backend"):
        record = await relay.runtime.store.get_dispatch("f", repo)
        assert record is not None and record["status"] == "DISPATCHED"
    stats = await relay.runtime.store.queue_stats("dispatch")
    assert stats.depth == 0


async def test_when_no_dispatch_succeeds_the_answer_is_502(
    relay: Relay, sandbox: SandboxGitHub
) -> None:
    sandbox.inject_fault("*/dispatches", status=503)
    response = await relay.send("pull_request", fixture("pull_request_opened.json"))
    assert response.status_code == 502
    body = response.json()
    assert body["detail"] == f"no dispatch succeeded ({len(DOWNSTREAMS)} failed)"
    assert len(body["errors"]) == len(DOWNSTREAMS)  # each failed dispatch, with its reason


async def test_a_relay_restart_between_failure_and_retry_loses_nothing(
    open_relay: OpenRelay, sandbox: SandboxGitHub
) -> None:
    sandbox.inject_fault("*/dispatches", status=502)
    async with open_relay() as first:
        response = await first.send("push", fixture("push_main.json"), delivery="restart")
        assert response.status_code == 502
    sandbox.clear_faults()

    async with open_relay() as second:
        assert (await second.runtime.store.queue_stats("dispatch")).depth == len(DOWNSTREAMS)
        await second.runtime.sweeper.sweep_once()

    assert dispatched_to(sandbox) == sorted(DOWNSTREAMS)


# --- operations -------------------------------------------------------------------


async def test_metrics_count_webhooks_and_dispatches(relay: Relay) -> None:
    await relay.send("pull_request", fixture("pull_request_opened.json"))
    metrics = (await relay.client.get("/metrics")).text
    assert 'crcr_webhooks_total{event="pull_request",outcome="dispatched"}' in metrics
    assert 'crcr_dispatches_total{outcome="dispatched"}' in metrics
    assert "crcr_dispatch_seconds_bucket" in metrics


def webhook_series(metrics: str) -> int:
    return sum(
        len(family.samples)
        for family in text_string_to_metric_families(metrics)
        if family.name == "crcr_webhooks"
    )


async def test_unsigned_requests_with_invented_event_names_add_no_metric_series(
    relay: Relay,
) -> None:
    before = webhook_series((await relay.client.get("/metrics")).text)
    for n in range(1000):
        await relay.client.post(
            "/github/webhook",
            content=b"{}",
            headers={"X-GitHub-Event": f"made-up-{n}-" + "x" * 100, "X-GitHub-Delivery": "d"},
        )
    metrics = (await relay.client.get("/metrics")).text

    assert "made-up-" not in metrics
    # At most the one new series of (other, unsigned): created and total samples.
    assert webhook_series(metrics) - before <= 2
    assert 'crcr_webhooks_total{event="other",outcome="unsigned"}' in metrics


async def test_ready_when_the_state_store_answers(relay: Relay) -> None:
    assert (await relay.client.get("/readyz")).json() == {"status": "ok"}
    assert (await relay.client.get("/healthz")).status_code == 200


async def test_a_sender_gone_mid_body_is_logged_at_info_and_dispatches_nothing(
    relay: Relay, sandbox: SandboxGitHub, caplog: pytest.LogCaptureFixture
) -> None:
    body = json.dumps(fixture("pull_request_opened.json")).encode()
    app = FastAPI()
    app.include_router(webhook_router(lambda: relay.runtime.webhook))
    headers = {
        "X-GitHub-Event": "pull_request",
        "X-GitHub-Delivery": "gone-mid-body",
        "X-Hub-Signature-256": sign_body(SECRET.encode(), body),
    }

    with caplog.at_level(logging.INFO):
        await post_then_vanish(app, "/github/webhook", headers, body[:1000], len(body))

    assert dispatched_to(sandbox) == []
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    cut = [r for r in caplog.records if "went away" in r.getMessage()]
    assert [(r.levelno, r.__dict__.get("delivery_id")) for r in cut] == [
        (logging.INFO, "gone-mid-body")
    ]

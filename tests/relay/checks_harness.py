"""The real relay app over the sandbox GitHub, for the check-run scenarios (SPEC §7).

Webhooks are signed and sent to the app; downstream callbacks echo the client payload
the sandbox received with the dispatch and carry sandbox-issued OIDC tokens; the state
store is real (SQLite file or Redis namespace, from `callback_harness.opener`). Nothing
runs in the background: `settle()` runs one sweeper pass, as the leader would.
"""

from __future__ import annotations

import copy
import json
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount
from tests.relay.callback_harness import (
    SANDBOX_API,
    StoreOpener,
    run_claims,
    sandbox_github_client,
)

from crcr.app import create_app
from crcr.config.settings import Settings, load_settings
from crcr.relay.checks.publisher import CheckPublisher
from crcr.relay.sweeper.report import SweepReport
from crcr.relay.webhook.signature import sign_body
from crcr.runtime import Runtime, open_runtime
from crcr.sandbox.github_identity import SandboxApp
from crcr.sandbox.github_state import SandboxGitHub
from crcr.sandbox.oidc_issuer import SandboxIssuer, SigningKey
from crcr.sandbox.webhooks import pull_request_event, push_event

UPSTREAM = "pytorch/pytorch"
SANDBOX = SANDBOX_API
ISSUER_URL = "http://issuer.sandbox/oidc"
AUDIENCE = "pytorch-cross-repo-ci-relay"
SECRET = "webhook-secret-for-check-tests"
L2_REPO, L3_REPO, L4_REPO = "org/report", "org/xpu-backend", "org/critical"
DEVICE_LABEL = "ciflow/crcr/xpu"
HEAD_SHA = "c0ffee" + "1" * 34
PR_NUMBER = 77
RUN_ID = 9001
ALLOWLIST = f"""
L2:
  - {L2_REPO}
L3:
  xpu:
    {L3_REPO}: [xpu-oncall]
L4:
  - {L4_REPO}: oncall1, oncall2
"""


def run_url(repo: str, run_id: int = RUN_ID) -> str:
    return f"https://github.com/{repo}/actions/runs/{run_id}"


@dataclass
class World:
    """The relay, the sandbox GitHub behind it, and the issuer downstream CI uses."""

    client: httpx.AsyncClient
    runtime: Runtime
    sandbox: SandboxGitHub
    issuer: SandboxIssuer

    @property
    def checks(self) -> CheckPublisher:
        assert self.runtime.checks is not None
        return self.runtime.checks

    async def webhook(
        self, event: str, payload: dict[str, Any], delivery: str | None = None
    ) -> httpx.Response:
        body = json.dumps(payload).encode()
        headers = {
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
            "X-Hub-Signature-256": sign_body(SECRET.encode(), body),
            "Content-Type": "application/json",
        }
        return await self.client.post("/github/webhook", content=body, headers=headers)

    async def pull_request(
        self, action: str = "opened", *, labels: tuple[str, ...] = (), sha: str = HEAD_SHA
    ) -> str:
        """Send a pull_request event; return its delivery id (what callbacks echo)."""
        delivery = str(uuid.uuid4())
        payload = pull_request_event(
            action, repo=UPSTREAM, number=PR_NUMBER, head_sha=sha, labels=labels
        )
        response = await self.webhook("pull_request", payload, delivery)
        assert response.status_code == 200, response.text
        return delivery

    async def push(self, sha: str) -> str:
        delivery = str(uuid.uuid4())
        payload = push_event(repo=UPSTREAM, after=sha)
        response = await self.webhook("push", payload, delivery)
        assert response.status_code == 200, response.text
        return delivery

    async def label(self, label: str = DEVICE_LABEL, *, sha: str = HEAD_SHA) -> httpx.Response:
        payload = pull_request_event(
            "labeled", repo=UPSTREAM, number=PR_NUMBER, head_sha=sha, label_name=label
        )
        response = await self.webhook("pull_request", payload)
        assert response.status_code == 200, response.text
        return response

    def callback_body(
        self,
        repo: str,
        delivery: str,
        status: str,
        conclusion: str | None = None,
        *,
        job: str = "test",
        workflow: str = "ci",
        run_id: int = RUN_ID,
        run_attempt: int = 1,
    ) -> dict[str, Any]:
        """The dispatch's client payload as the sandbox received it, plus `workflow`."""
        sent = [
            d.client_payload
            for d in self.sandbox.dispatches(repo)
            if d.client_payload.get("delivery_id") == delivery
        ]
        assert sent, f"{repo} got no dispatch for {delivery}"
        body = copy.deepcopy(sent[0])
        body["workflow"] = {
            "schema_version": "1",
            "status": status,
            "conclusion": conclusion,
            "name": workflow,
            "url": run_url(repo, run_id),
            "run_id": str(run_id),
            "run_attempt": str(run_attempt),
            "job_name": job,
            "check_run_id": str(run_id * 10),
        }
        return body

    async def report(
        self,
        repo: str,
        delivery: str,
        status: str,
        conclusion: str | None = None,
        **workflow: Any,
    ) -> httpx.Response:
        """One callback from `repo`'s CI, answered 200 unless something is wrong."""
        body = self.callback_body(repo, delivery, status, conclusion, **workflow)
        return await self.post_callback(repo, body)

    async def post_callback(self, repo: str, body: dict[str, Any]) -> httpx.Response:
        token = self.issuer.mint_actions_token(repo, audience=AUDIENCE, **run_claims(body))
        return await self.client.post(
            "/github/callback",
            content=json.dumps(body).encode(),
            headers={"authorization": f"Bearer {token}"},
        )

    def check_runs(self, name: str | None = None) -> list[dict[str, Any]]:
        """Check runs created on the upstream repo, oldest first."""
        runs = self.sandbox.check_runs(UPSTREAM)
        return [run for run in runs if name is None or run["name"] == name]

    def latest(self, name: str) -> dict[str, Any]:
        """The check run GitHub shows for `name` (the newest)."""
        runs = self.check_runs(name)
        assert runs, f"no check run named {name}"
        return runs[-1]

    def comments(self) -> list[dict[str, Any]]:
        return self.sandbox.comments(UPSTREAM, PR_NUMBER)

    async def settle(self) -> SweepReport:
        """One sweeper pass: zombies, then every queue."""
        return await self.runtime.sweeper.sweep_once()


def relay_settings(
    tmp_path: Path, sandbox: SandboxGitHub, allowlist_url: str | None = None, **overrides: Any
) -> Settings:
    """The relay's settings; the allowlist is a file unless `allowlist_url` names a blob."""
    allowlist = tmp_path / "allowlist.yaml"
    allowlist.write_text(ALLOWLIST)
    return load_settings(
        upstream_repo=UPSTREAM,
        webhook_secret=SECRET,
        github_app_id=str(sandbox.app.app_id),
        github_app_private_key=sandbox.app.private_key_pem,
        github_api_url=SANDBOX,
        allowlist=allowlist_url or str(allowlist),
        oidc_issuers=[{"issuer": ISSUER_URL, "kind": "github"}],
        oidc_audience=AUDIENCE,
        data_dir=tmp_path / "data",
        # Well above the 0.3 s latency some scenarios inject, on a loaded machine too.
        github_timeout=2.0,
        rate_limit_per_min=10_000,
        **overrides,
    )


@pytest.fixture(scope="session")
def sandbox_app() -> SandboxApp:
    """One App key for the session: generating RSA keys is most of a scenario's setup."""
    return SandboxApp.generate()


@asynccontextmanager
async def open_world(
    opener: StoreOpener,
    tmp_path: Path,
    sandbox: SandboxGitHub,
    signing_key: SigningKey,
    allowlist_url: str | None = None,
    clock: Callable[[], float] = time.time,
    **overrides: Any,
) -> AsyncIterator[World]:
    """A relay app on a fresh store in front of `sandbox`, with the sandbox's OIDC issuer;
    `clock` is the relay's time for jobs (`open_runtime`), `overrides` further settings."""
    issuer = SandboxIssuer(ISSUER_URL, key=signing_key)
    settings = relay_settings(tmp_path, sandbox, allowlist_url, **overrides)
    store = await opener.open()
    github = sandbox_github_client(sandbox, store)
    issuer_app = Starlette(routes=[Mount("/oidc", routes=issuer.routes())])
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=issuer_app))

    async def open_bound(s: Settings) -> Runtime:
        return await open_runtime(s, store=store, github=github, http=http, clock=clock)

    app = create_app(settings, runtime=open_bound, background=False)
    try:
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://relay"
            ) as client,
        ):
            yield World(client, app.state.runtime, sandbox, issuer)
    finally:
        await http.aclose()
        await github.aclose()
        await store.close()


def installed_sandbox(app: SandboxApp) -> SandboxGitHub:
    """The sandbox GitHub with the App on the upstream and the three backends."""
    sandbox = SandboxGitHub(app=app)
    sandbox.install_app(UPSTREAM, L2_REPO, L3_REPO, L4_REPO)
    return sandbox


@pytest.fixture
async def world(
    opener: StoreOpener, tmp_path: Path, sandbox_app: SandboxApp, signing_key: SigningKey
) -> AsyncIterator[World]:
    """A relay app on a fresh store, GitHub and the OIDC issuer served by the sandbox."""
    sandbox = installed_sandbox(sandbox_app)
    async with open_world(opener, tmp_path, sandbox, signing_key) as opened:
        # Level verdicts would demote a backend after its first failure; the check-run
        # scenarios run them only where they say so (tests/relay/levels).
        opened.runtime.sweeper.extra_steps.clear()
        # The scenarios read GitHub right after a callback, so the inline attempt must
        # finish: on a loaded machine (the suite runs on every core) one can overrun the
        # 1 s production budget and be left to the queue, which no scenario here is about.
        opened.checks.inline_budget = opened.checks.backfill_budget = 30.0
        yield opened

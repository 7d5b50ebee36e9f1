"""The whole loop on loopback for scenario tests: sandbox GitHub and OIDC issuer, relay + HUD,
simulated downstream CI. Every hop between them is real HTTP, as in a deployment.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from starlette.routing import Mount

from crcr.app import create_app
from crcr.config.settings import load_settings
from crcr.demo.servers import EmbeddedServer, bind_socket, socket_url
from crcr.sandbox.github_server import create_sandbox_app
from crcr.sandbox.github_state import SandboxGitHub
from crcr.sandbox.oidc_issuer import SandboxIssuer
from crcr.sandbox.simulated_ci import SimulatedCI
from crcr.sandbox.simulated_ci_model import WorkflowSpec
from crcr.sandbox.webhooks import WebhookDelivery, send


@dataclass
class Loop:
    """The running loop: where the relay and the sandbox listen, and handles on the sandbox."""

    relay_url: str
    sandbox_url: str
    secret: str
    github: SandboxGitHub
    ci: SimulatedCI
    http: httpx.AsyncClient

    async def webhook(self, event: str, payload: dict[str, Any]) -> httpx.Response:
        """Send a signed upstream webhook to the relay."""
        delivery = WebhookDelivery.build(event, payload, self.secret)
        return await send(self.http, f"{self.relay_url}/github/webhook", delivery)

    async def hud(self, path: str) -> Any:
        """GET the HUD's JSON API (`/api/crcr<path>`), which must answer 2xx."""
        response = await self.http.get(f"{self.relay_url}/api/crcr{path}")
        response.raise_for_status()
        return response.json()


@asynccontextmanager
async def running_loop(
    work_dir: Path,
    *,
    upstream: str,
    allowlist: str,
    workflows: Mapping[str, WorkflowSpec],
    database_url: str | None = None,
    seed: int = 7,
    **setting_overrides: Any,
) -> AsyncIterator[Loop]:
    """Start the loop (relay state in SQLite under `work_dir`), yield it, stop it.

    `setting_overrides` are further relay settings (`load_settings` keywords).
    """
    sandbox_socket, relay_socket = bind_socket("127.0.0.1", 0), bind_socket("127.0.0.1", 0)
    sandbox_url = socket_url(sandbox_socket)
    github = SandboxGitHub()
    github.install_app(upstream, *workflows)
    issuer = SandboxIssuer(f"{sandbox_url}/oidc")
    (work_dir / "allowlist.yaml").write_text(allowlist)
    secret = secrets.token_urlsafe(16)
    settings = load_settings(
        upstream_repo=upstream,
        webhook_secret=secret,
        github_app_id=str(github.app.app_id),
        github_app_private_key=github.app.private_key_pem,
        github_api_url=sandbox_url,
        allowlist=str(work_dir / "allowlist.yaml"),
        oidc_issuers=[{"issuer": issuer.issuer, "kind": "github"}],
        redis_url=None,
        data_dir=work_dir,
        database_url=database_url,
        hud_url=None,
        hud_token=secrets.token_urlsafe(16),
        **setting_overrides,
    )
    sandbox = EmbeddedServer(
        create_sandbox_app(github, extra_routes=[Mount("/oidc", routes=issuer.routes())]),
        sandbox_socket,
        lifespan="off",
    )
    relay = EmbeddedServer(create_app(settings), relay_socket)
    await sandbox.start()
    await relay.start()
    ci = SimulatedCI(
        github,
        issuer,
        callback_url=f"{relay.url}/github/callback",
        workflows=workflows,
        seed=seed,
        work_dir=work_dir / "runners",
    )
    await ci.start()
    try:
        async with httpx.AsyncClient(timeout=30) as http:
            yield Loop(relay.url, sandbox_url, secret, github, ci, http)
    finally:
        await ci.stop()
        await relay.stop()
        await sandbox.stop()

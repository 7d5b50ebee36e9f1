"""Run the sandbox as a real HTTP server: bind, compose GitHub API and issuer, serve."""

from __future__ import annotations

import importlib.util
import json
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.routing import BaseRoute, Mount

from crcr.sandbox.by_hand import by_hand_routes
from crcr.sandbox.github_server import create_sandbox_app
from crcr.sandbox.github_state import SandboxGitHub
from crcr.sandbox.pr_view import pr_view_routes

if TYPE_CHECKING:
    from crcr.sandbox.oidc_issuer import SandboxIssuer


@dataclass(frozen=True)
class SandboxServer:
    """A composed sandbox, ready to serve on an already bound socket."""

    app: Starlette
    github: SandboxGitHub
    sock: socket.socket
    base_url: str
    api_url: str
    issuer_url: str | None
    key_path: Path
    issuer: SandboxIssuer | None = None

    def banner(self) -> list[str]:
        """What to print so that a relay can be pointed at this sandbox."""
        lines = [
            f"sandbox listening on {self.base_url}",
            f"CRCR_GITHUB_API_URL={self.api_url}",
            f"CRCR_GITHUB_APP_ID={self.github.app.app_id}",
            f"CRCR_GITHUB_APP_PRIVATE_KEY={self.key_path}",
        ]
        if self.issuer_url:
            issuers = json.dumps([{"issuer": self.issuer_url, "kind": "github"}])
            lines.append(f"CRCR_OIDC_ISSUERS='{issuers}'")
            lines.append(f"OIDC issuer: {self.issuer_url}")
        lines.append(f"pull request pages: {self.base_url}/web/OWNER/REPO/pull/N")
        return lines


def bind(host: str, port: int) -> socket.socket:
    """Bind before building the app, so port 0 yields a known URL for the issuer."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    return sock


def _issuer(issuer_url: str) -> SandboxIssuer | None:
    """The OIDC issuer, when that part of the sandbox is installed."""
    if importlib.util.find_spec("crcr.sandbox.oidc_issuer") is None:
        return None
    from crcr.sandbox.oidc_issuer import SandboxIssuer

    return SandboxIssuer(issuer_url)


def build_server(
    host: str,
    port: int,
    key_path: Path,
    *,
    installed_repos: Sequence[str] = (),
    api_prefix: str = "",
) -> SandboxServer:
    """Bind, generate the App, write its key, and compose the sandbox app."""
    sock = bind(host, port)
    bound_port = sock.getsockname()[1]
    shown_host = f"[{host}]" if ":" in host else host
    base_url = f"http://{shown_host}:{bound_port}"
    github = SandboxGitHub()
    if installed_repos:
        github.install_app(*installed_repos)
    key_path = github.app.write_private_key(key_path.expanduser().resolve())
    issuer_url = f"{base_url}/oidc"
    issuer = _issuer(issuer_url)
    extra: list[BaseRoute] = [
        *([Mount("/oidc", routes=issuer.routes())] if issuer else []),
        *by_hand_routes(github, lambda: issuer),
        *pr_view_routes(github),
    ]
    return SandboxServer(
        app=create_sandbox_app(github, extra_routes=extra, api_prefix=api_prefix),
        github=github,
        sock=sock,
        base_url=base_url,
        api_url=base_url + api_prefix,
        issuer_url=issuer_url if issuer else None,
        key_path=key_path,
        issuer=issuer,
    )


def serve(server: SandboxServer) -> None:
    """Serve until interrupted."""
    import uvicorn

    config = uvicorn.Config(server.app, log_level="warning", lifespan="off")
    uvicorn.Server(config).run(sockets=[server.sock])


def serve_with_canary(server: SandboxServer, canary: str, callback_url: str) -> None:
    """Serve until interrupted while `canary` answers every dispatch with probe jobs.

    The canary's jobs report to `callback_url` (the relay's `/github/callback`) with
    tokens from this sandbox's issuer, through the real reporter, like any simulated
    downstream's.
    """
    import asyncio

    import uvicorn

    from crcr.sandbox.canary import CANARY_WORKFLOW, CanaryCI

    if server.issuer is None:
        raise ValueError("a canary needs the sandbox's OIDC issuer, which is not installed")
    server.github.install_app(canary)
    ci = CanaryCI(
        server.github, server.issuer, callback_url=callback_url, workflows={canary: CANARY_WORKFLOW}
    )

    async def main() -> None:
        await ci.start()
        try:
            config = uvicorn.Config(server.app, log_level="warning", lifespan="off")
            await uvicorn.Server(config).serve(sockets=[server.sock])
        finally:
            await ci.stop()

    asyncio.run(main())

"""The demo's relay health (SPEC §13): a canary that probes, and a local alert sink.

The canary (`crcr-demo/canary`, at L2) answers every dispatch — each pull request's and
the leader's `crcr_probe` — with the sandbox's probe jobs (`probe` passes, `probe-xfail`
fails as it should), so `/crcr/health` shows Healthy within a minute. The alert sink is
a tiny receiver on a loopback port, set as `CRCR_ALERT_WEBHOOK` with a fresh
`CRCR_ALERT_SECRET`: it checks each alert's signature and keeps one line per alert for
the demo to print. The degrading backend has one passing default-branch job on record
before it starts failing, so its first state is `passing` and its failure raises
exactly one `failing` alert (a first state raises none).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from anyio import to_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from crcr.demo.backends import DEGRADING_BACKEND, DemoBackend
from crcr.demo.servers import EmbeddedServer, bind_socket
from crcr.hud.component import Hud
from crcr.hud.health.rows import recent_completed_jobs
from crcr.relay.alerts.alert import SIGNATURE_HEADER, alert_text, signature
from crcr.sandbox.canary import CANARY_WORKFLOW, CanaryCI
from crcr.sandbox.github_state import SandboxGitHub
from crcr.sandbox.oidc_issuer import SandboxIssuer

log = logging.getLogger(__name__)

CANARY_REPO = "crcr-demo/canary"
CANARY_BACKEND = DemoBackend(CANARY_REPO, "L2", CANARY_WORKFLOW)
PROBE_EVERY = 3600.0
"""Simulated seconds between the leader's probes (`CRCR_CANARY_INTERVAL`'s default)."""
PROBE_DEADLINE = 1800.0
"""Simulated seconds a probe may take (`CRCR_CANARY_DEADLINE`'s default)."""
ALERT_PATH = "/alerts"


def with_canary(backends: Sequence[DemoBackend]) -> tuple[DemoBackend, ...]:
    """The demo's backends and its canary (the allowlist, the App's installations)."""
    return (*backends, CANARY_BACKEND)


class AlertReceiver:
    """The local sink: checks each alert's signature and keeps its line."""

    def __init__(self, secret: str) -> None:
        self.secret = secret.encode()
        self.alerts: list[dict[str, Any]] = []
        self.refused = 0
        self.app = Starlette(routes=[Route(ALERT_PATH, self.receive, methods=["POST"])])

    async def receive(self, request: Request) -> Response:
        """Accept a signed alert (204); refuse anything else (401), as a real sink would."""
        raw = await request.body()
        given = request.headers.get(SIGNATURE_HEADER, "")
        if not hmac.compare_digest(given, signature(self.secret, raw)):
            self.refused += 1
            return Response(status_code=401)
        body = json.loads(raw)
        if body in self.alerts:  # delivery is at least once: a redelivery is the same alert
            return Response(status_code=204)
        self.alerts.append(body)
        log.info("demo alert sink: %s", alert_text(body))
        return Response(status_code=204)

    @property
    def lines(self) -> tuple[str, ...]:
        """Every alert received, oldest first, one line each."""
        return tuple(alert_text(body) for body in self.alerts)


def passing_push(repo: str, upstream: str, level: str, now: datetime) -> dict[str, Any]:
    """One passing default-branch job of `repo` an hour ago, as the relay forwards it."""
    sha = hashlib.sha1(repo.encode()).hexdigest()  # noqa: S324 - a made-up commit
    at = (now - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    workflow = {
        "schema_version": "1",
        "status": "completed",
        "conclusion": "success",
        "name": "ci",
        "url": f"https://github.com/{repo}/actions/runs/1",
        "run_id": "1",
        "run_attempt": "1",
        "job_name": "build",
        "check_run_id": "1",
        "started_at": at,
        "completed_at": at,
    }
    dispatch = {"upstream_repo": upstream, "event_type": "push", "head_sha": sha}
    return {
        "trusted": {"verified_repo": repo, "downstream_repo_level": level, "dispatch": dispatch},
        "untrusted": {
            "callback_payload": {
                "event_type": "push",
                "delivery_id": str(uuid.uuid5(uuid.NAMESPACE_URL, repo)),
                "workflow": workflow,
            }
        },
    }


class DemoHealth:
    """The canary's CI and the alert receiver, started and stopped with the demo."""

    def __init__(self, speed: float) -> None:
        self.speed = speed
        self.receiver = AlertReceiver(secrets.token_urlsafe(32))
        self._socket = bind_socket("127.0.0.1", 0)
        self._server = EmbeddedServer(self.receiver.app, self._socket, lifespan="off")
        self.canary: CanaryCI | None = None

    def settings(self) -> dict[str, Any]:
        """The relay's `CRCR_CANARY_*` and `CRCR_ALERT_*` for the demo, at its speed."""
        return {
            "canary_repo": CANARY_REPO,
            "canary_interval": PROBE_EVERY / self.speed,
            "canary_deadline": PROBE_DEADLINE / self.speed,
            "alert_webhook": f"{self._server.url}{ALERT_PATH}",
            "alert_secret": self.receiver.secret.decode(),
        }

    async def start(
        self,
        github: SandboxGitHub,
        issuer: SandboxIssuer,
        callback_url: str,
        *,
        hud: Hud | None,
        upstream: str,
        seed: int,
    ) -> None:
        """Serve the sink, record the failing backend's passing start, start the canary."""
        await self._server.start()
        if hud is not None:
            await self._record_passing_start(hud, upstream)
        self.canary = CanaryCI(
            github,
            issuer,
            callback_url=callback_url,
            workflows={CANARY_REPO: CANARY_WORKFLOW},
            speed=self.speed,
            seed=seed,
        )
        await self.canary.start()

    async def _record_passing_start(self, hud: Hud, upstream: str) -> None:
        """Once per data directory: the degrading backend passed on main before it failed."""
        repo, push = DEGRADING_BACKEND, frozenset({"push"})
        if await to_thread.run_sync(lambda: recent_completed_jobs(hud.engine, repo, 1, push)):
            return
        now = datetime.now(UTC)
        body = passing_push(repo, upstream, "L3", now)
        await hud.ingestor.ingest_received([(body, now - timedelta(hours=1))])

    async def stop(self) -> None:
        """Stop the canary's jobs, then the sink."""
        if self.canary is not None:
            await self.canary.stop()
        await self._server.stop()

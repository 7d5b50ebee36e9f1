"""A deployment of several real crcr processes for the scale-out scenarios (issues 17, 22).

What runs where:
- `crcr serve` instances and `crcr sweep --loop` are real child processes, each started
  with the environment an operator would give it, sharing one state store (a Redis key
  prefix of the test's own, or one SQLite data directory) — and SIGKILLed or SIGTERMed
  like real ones.
- The HUD is external (`crcr hud serve`, a child process, on SQLite or a PostgreSQL
  schema of the test's own), reached by the relays through `CRCR_HUD_URL`. Between them
  sits `HudGate`, served by the test: it forwards every body to the HUD, counts what
  the HUD accepted per job and status (so "exactly once" is counted, not assumed), and
  can be shut to answer 503 — the outage.
- The sandbox GitHub and its OIDC issuer are served by the test, which can so count
  GitHub calls and JWKS fetches across all the processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import redis
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from tests.waiting import eventually

from crcr.demo.servers import EmbeddedServer, bind_socket
from crcr.sandbox.github_server import create_sandbox_app
from crcr.sandbox.github_state import SandboxGitHub
from crcr.sandbox.oidc_issuer import SandboxIssuer
from crcr.sandbox.webhooks import WebhookDelivery, pull_request_event, send
from crcr.stores.keys import RedisKeys

UPSTREAM = "scale-org/pytorch"
L2_REPOS = ("scale-org/l2-alpha", "scale-org/l2-beta")
L4_REPO = "scale-org/l4-critical"
ALLOWLIST_PATH = ".github/crcr-allowlist.yaml"
ALLOWLIST = f"L2:\n  - {L2_REPOS[0]}\n  - {L2_REPOS[1]}\nL4:\n  - {L4_REPO}: oncall-one\n"
AUDIENCE = "pytorch-cross-repo-ci-relay"
HUD_TOKEN = "scaleout-hud-token"
SECRET = "scaleout-webhook-secret"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "scaleout"
READY_WITHIN = 90.0  # seconds a process may take to start on a loaded 2-core machine


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def job_of(body: dict[str, Any]) -> tuple[str, str, str, str]:
    """(repo, run id, job name, status) of a SPEC §6 body."""
    workflow = body["untrusted"]["callback_payload"]["workflow"]
    repo = body["trusted"]["verified_repo"]
    return repo, str(workflow["run_id"]), str(workflow["job_name"]), str(workflow["status"])


@dataclass
class HudGate:
    """The relays' `CRCR_HUD_URL`: forwards to the real HUD, counts, and can be shut."""

    target: str = ""
    shut: bool = False
    written: Counter[tuple[str, str, str, str]] = field(default_factory=Counter)
    abandoned: Counter[tuple[str, str, str, str]] = field(default_factory=Counter)
    arrivals: dict[tuple[str, str, str, str], list[float]] = field(default_factory=dict)
    refused: int = 0
    _http: httpx.AsyncClient | None = None

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/api/crcr/results", self._results, methods=["POST"])])

    async def _results(self, request: Request) -> Response:
        arrived = time.monotonic()
        body = await request.body()
        if self.shut:
            self.refused += 1
            return JSONResponse({"detail": "the HUD is down (test outage)"}, status_code=503)
        if self._http is None:
            self._http = httpx.AsyncClient(timeout=30)
        headers = {k: v for k, v in request.headers.items() if k.lower() != "host"}
        answer = await self._http.post(self.target, content=body, headers=headers)
        if answer.is_success:
            # A relay that gave up waiting (its CRCR_HUD_TIMEOUT) sends the body again
            # later: that write is at-least-once by nature, and counted apart.
            gone = await request.is_disconnected()
            job = job_of(json.loads(body))
            (self.abandoned if gone else self.written)[job] += 1
            if not gone:
                self.arrivals.setdefault(job, []).append(arrived)
        return Response(answer.content, answer.status_code, media_type="application/json")

    def completed(self) -> dict[tuple[str, str, str], int]:
        """How many times each job's completed body reached the HUD."""
        return {k[:3]: n for k, n in self.written.items() if k[3] == "completed"}

    def completed_arrivals(self, job: tuple[str, str, str]) -> list[float]:
        """When (monotonic) each write of `job`'s completed body reached the gate."""
        return self.arrivals.get((*job, "completed"), [])

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()


@dataclass
class Child:
    """One crcr process."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    port: int | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kill(self) -> None:
        """SIGKILL: no shutdown, no lock released, leases left as they are."""
        self.popen.send_signal(signal.SIGKILL)
        self.popen.wait(timeout=30)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


@dataclass
class Deployment:
    """The processes, the sandbox, the gate, and what the test reads back."""

    work: Path
    github: SandboxGitHub
    issuer: SandboxIssuer
    gate: HudGate
    env: dict[str, str]
    http: httpx.AsyncClient
    redis_url: str | None
    redis_prefix: str | None
    children: dict[str, Child] = field(default_factory=dict)

    # --- processes --------------------------------------------------------------------
    def _spawn(self, name: str, args: list[str], extra: dict[str, str]) -> subprocess.Popen[bytes]:
        env = {**self.env, **extra}
        log = (self.work / f"{name}.log").open("ab")
        try:
            return subprocess.Popen(
                [sys.executable, "-m", "crcr", *args], env=env, stdout=log, stderr=log
            )
        finally:
            log.close()

    async def start_relay(self, name: str, **extra: str) -> Child:
        """`crcr serve` on a free port, ready (`/readyz`) before this returns."""
        port = free_port()
        data = str(self.work / "state")  # one SQLite state for all when Redis is not used
        popen = self._spawn(name, ["serve", "--port", str(port)], {"CRCR_DATA_DIR": data, **extra})
        child = Child(name, popen, self.work / f"{name}.log", port)
        self.children[name] = child
        await self._until_ready(child)
        return child

    async def start_sweeper(self, name: str = "sweeper") -> Child:
        """`crcr sweep --loop`, once it has started sweeping (its first lock attempt)."""
        popen = self._spawn(name, ["sweep", "--loop"], {"CRCR_DATA_DIR": str(self.work / "state")})
        child = Child(name, popen, self.work / f"{name}.log")
        self.children[name] = child

        async def sweeping() -> bool:
            assert popen.poll() is None, child.log_text()[-3000:]
            return "crcr sweep --loop: sweeping" in child.log_text()

        await eventually(sweeping, READY_WITHIN, f"{name} sweeping", every=0.2)
        return child

    async def start_hud(self, database_url: str) -> Child:
        port = free_port()
        popen = self._spawn(
            "hud", ["hud", "serve", "--port", str(port)], {"CRCR_DATABASE_URL": database_url}
        )
        child = Child("hud", popen, self.work / "hud.log", port)
        self.children["hud"] = child
        await self._until_ready(child, path="/api/crcr/summary?days=1")
        self.gate.target = f"{child.url}/api/crcr/results"
        return child

    async def _until_ready(self, child: Child, path: str = "/readyz") -> None:
        async def ready() -> bool:
            assert child.popen.poll() is None, f"{child.name} exited:\n{child.log_text()[-3000:]}"
            with contextlib.suppress(httpx.TransportError):
                return (await self.http.get(f"{child.url}{path}", timeout=5)).status_code == 200
            return False

        await eventually(ready, READY_WITHIN, f"{child.name} ready", every=0.2)

    def stop_all(self) -> None:
        """SIGTERM every process still running; keep their logs in test-artifacts/."""
        for child in self.children.values():
            if child.popen.poll() is None:
                child.popen.send_signal(signal.SIGTERM)
        for child in self.children.values():
            try:
                child.popen.wait(timeout=60)
            except subprocess.TimeoutExpired:
                child.popen.kill()
                child.popen.wait()
        kept = ARTIFACTS / self.work.name
        kept.mkdir(parents=True, exist_ok=True)
        for log in self.work.glob("*.log"):
            shutil.copy(log, kept / log.name)

    # --- the sweeper lock ---------------------------------------------------------------
    def lock_holder(self) -> str | None:
        """The owner of the sweeper lock as the store holds it (host:pid:random)."""
        if self.redis_url is not None:
            with redis.Redis.from_url(self.redis_url, decode_responses=True) as client:
                value = client.get(RedisKeys(self.redis_prefix or "crcr:").lock("sweeper"))
                return str(value) if value is not None else None
        path = self.work / "state" / "state.db"
        if not path.exists():
            return None
        with contextlib.closing(sqlite3.connect(path, timeout=10)) as db:
            row = db.execute(
                "SELECT value FROM records WHERE kind = 'lock' AND key = 'sweeper'"
                " AND expires_at > ?",
                (time.time(),),
            ).fetchone()
        return None if row is None else str(row[0])

    def lock_holder_pid(self) -> int | None:
        holder = self.lock_holder()
        return int(holder.split(":")[1]) if holder else None

    def leader(self) -> Child | None:
        pid = self.lock_holder_pid()
        return next((c for c in self.children.values() if c.popen.pid == pid), None)

    # --- traffic ----------------------------------------------------------------------
    async def open_pr(self, instance: Child, number: int) -> str:
        """A pull_request webhook to `instance`; its delivery id, once dispatched."""
        event = pull_request_event("opened", repo=UPSTREAM, number=number)
        delivery = WebhookDelivery.build("pull_request", event, SECRET)
        answer = await send(self.http, f"{instance.url}/github/webhook", delivery)
        assert answer.status_code == 200, answer.text
        assert sorted(answer.json()["dispatched"]) == sorted([*L2_REPOS, L4_REPO]), answer.text
        return delivery.delivery_id

    def client_payload(self, repo: str, delivery_id: str) -> dict[str, Any]:
        [dispatch] = [
            d
            for d in self.github.dispatches(repo)
            if d.client_payload.get("delivery_id") == delivery_id
        ]
        return dict(dispatch.client_payload)

    def callback(
        self, repo: str, delivery_id: str, job: str, status: str, *, run_id: str = "700"
    ) -> tuple[dict[str, str], bytes]:
        """Headers and body of one callback, as `crcr report` would send it."""
        token = self.issuer.mint_actions_token(repo, audience=AUDIENCE, run_id=run_id)
        workflow = {
            "schema_version": "1",
            "status": status,
            "conclusion": "success" if status == "completed" else None,
            "name": "ci",
            "url": f"https://github.com/{repo}/actions/runs/{run_id}",
            "run_id": run_id,
            "run_attempt": "1",
            "job_name": job,
            "check_run_id": "4242",
            "started_at": "2026-11-25T10:00:00Z",
            "completed_at": "2026-11-25T10:05:00Z" if status == "completed" else None,
        }
        body = {**self.client_payload(repo, delivery_id), "workflow": workflow}
        headers = {"authorization": f"Bearer {token}", "content-type": "application/json"}
        return headers, json.dumps(body).encode()

    async def report(
        self, instance: Child, repo: str, delivery_id: str, job: str, status: str
    ) -> httpx.Response:
        headers, body = self.callback(repo, delivery_id, job, status)
        return await self.http.post(
            f"{instance.url}/github/callback", content=body, headers=headers
        )


@asynccontextmanager
async def deployment(
    work: Path,
    *,
    redis_url: str | None = None,
    redis_prefix: str | None = None,
    **settings: str,
) -> AsyncIterator[Deployment]:
    """Sandbox and gate served here; the crcr processes are started by the test."""
    github = SandboxGitHub()
    github.install_app(UPSTREAM, *L2_REPOS, L4_REPO)
    github.add_file(UPSTREAM, ALLOWLIST_PATH, ALLOWLIST)
    sandbox_socket, gate_socket = bind_socket("127.0.0.1", 0), bind_socket("127.0.0.1", 0)
    sandbox_url = f"http://127.0.0.1:{sandbox_socket.getsockname()[1]}"
    issuer = SandboxIssuer(f"{sandbox_url}/oidc")
    gate = HudGate()
    sandbox = EmbeddedServer(
        create_sandbox_app(github, extra_routes=[Mount("/oidc", routes=issuer.routes())]),
        sandbox_socket,
        lifespan="off",
    )
    gate_server = EmbeddedServer(gate.app(), gate_socket, lifespan="off")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRCR_")}
    env.update(
        CRCR_UPSTREAM_REPO=UPSTREAM,
        CRCR_WEBHOOK_SECRET=SECRET,
        CRCR_GITHUB_APP_ID=str(github.app.app_id),
        CRCR_GITHUB_APP_PRIVATE_KEY=github.app.private_key_pem,
        CRCR_GITHUB_API_URL=sandbox_url,
        CRCR_ALLOWLIST=f"https://github.com/{UPSTREAM}/blob/main/{ALLOWLIST_PATH}",
        CRCR_OIDC_ISSUERS=json.dumps([{"issuer": issuer.issuer, "kind": "github"}]),
        CRCR_HUD_URL=f"{gate_server.url}/api/crcr/results",
        CRCR_HUD_TOKEN=HUD_TOKEN,
        **settings,
    )
    if redis_url is not None:
        env.update(CRCR_REDIS_URL=redis_url, CRCR_REDIS_PREFIX=redis_prefix or "crcr:")
    await sandbox.start()
    await gate_server.start()
    try:
        async with httpx.AsyncClient(timeout=60) as http:
            placed = Deployment(work, github, issuer, gate, env, http, redis_url, redis_prefix)
            try:
                yield placed
            finally:
                await asyncio.to_thread(placed.stop_all)
    finally:
        await gate.aclose()
        await gate_server.stop()
        await sandbox.stop()

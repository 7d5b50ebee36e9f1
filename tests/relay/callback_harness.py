"""A relay's downstream side, assembled from real parts, for the callback/sweeper tests.

Real state stores (SQLite file, Redis namespace), the sandbox OIDC issuer served in
process, a real allowlist, and the real HUD on a SQLite file of the test's own, which
can be switched down to answer 503 or slowed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from pydantic import SecretStr
from sqlalchemy import select
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route

from crcr.config.settings import OidcIssuer, Settings
from crcr.github.client import GitHubClient
from crcr.hud.component import Hud, mount_hud
from crcr.hud.db import create_results_engine, migrate
from crcr.hud.models import JOBS
from crcr.hud.queries import HudQueries
from crcr.hud.write.ingest import HudIngestor
from crcr.oidc import OidcVerifier
from crcr.relay.allowlist.model import Allowlist, parse_allowlist
from crcr.relay.callback.deps import CallbackDeps
from crcr.relay.callback.endpoint import callback_router
from crcr.relay.jobs.dispatch import DispatchRecord, DispatchStatus, UpstreamContext
from crcr.relay.jobs.events import JobTransitioned
from crcr.relay.results.forwarder import HttpHudTransport, HudForwarder, HudTransport
from crcr.relay.sweeper.sweeper import Sweeper
from crcr.sandbox.github_server import create_sandbox_app
from crcr.sandbox.github_state import SandboxGitHub
from crcr.sandbox.oidc_issuer import SandboxIssuer, SigningKey
from crcr.stores.redis.state import RedisStateStore
from crcr.stores.sqlite.state import SqliteStateStore
from crcr.stores.state import StateStore
from crcr.web.retry_policy import Backoff

SANDBOX_API = "http://github.sandbox"

ISSUER_URL = "http://sandbox.test/oidc"
AUDIENCE = "pytorch-cross-repo-ci-relay"
HUD_ROOT = "http://hud.test"
RESULTS_PATH = "/api/crcr/results"
HUD_URL = HUD_ROOT + RESULTS_PATH
HUD_TOKEN = "hud-shared-secret"
UPSTREAM = "pytorch/pytorch"
L1_REPO, L2_REPO, L4_REPO = "org1/dispatch-only", "org2/l2-backend", "org4/critical"
HEAD_SHA = "a" * 40
PR_NUMBER = 123

ALLOWLIST = f"""
L1:
  - {L1_REPO}
L2:
  - {L2_REPO}
L4:
  - {L4_REPO}: oncall1
"""


class Clock:
    """Wall-clock time that a test can move forward."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class StandInHud:
    """The real HUD (its API and ingestion over a SQLite file), which a test can slow or take down.

    Kept across relay restarts like a real HUD. `down` answers 503 as a HUD under
    maintenance would, `delay` holds each body before it is looked at, `refusal` answers
    a 4xx as a stricter HUD than ours (PyTorch's) may; everything else is
    the real route's answer, so rows are keyed as the HUD keys them and refusals read
    `{"detail": ...}`.
    """

    def __init__(self, database: Path) -> None:
        self.engine = create_results_engine(f"sqlite:///{database}")
        migrate(self.engine)
        self.hud = Hud(
            engine=self.engine,
            ingestor=HudIngestor(self.engine),
            queries=HudQueries(self.engine),
            token=SecretStr(HUD_TOKEN),
            retention_days=90,
        )
        real = FastAPI()
        mount_hud(real, self._the_hud)
        self._real = httpx.AsyncClient(transport=httpx.ASGITransport(app=real), base_url=HUD_ROOT)
        self.writes = 0  # bodies the real HUD answered 2xx
        self.received: list[Any] = []  # bodies that reached the real HUD, parsed
        self.refused = 0  # bodies answered 503 while down
        self.down = False
        self.delay = 0.0
        self.refusal: tuple[int, str] | None = None
        self.app = Starlette(
            routes=[
                Route(RESULTS_PATH, self._ingest, methods=["POST"]),
                Mount("/", app=real),
            ]
        )

    def _the_hud(self, request: Request) -> Hud:
        return self.hud

    async def _ingest(self, request: Request) -> Response:
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.down:
            self.refused += 1
            return JSONResponse({"detail": "down for maintenance"}, 503)
        if self.refusal is not None:
            status, detail = self.refusal
            return JSONResponse({"detail": detail}, status)
        body = await request.body()
        with contextlib.suppress(ValueError):
            self.received.append(json.loads(body))
        kept = {k: v for k, v in request.headers.items() if k not in ("host", "content-length")}
        answer = await self._real.post(RESULTS_PATH, content=body, headers=kept)
        if answer.is_success:
            self.writes += 1
        return Response(answer.content, answer.status_code, media_type="application/json")

    @property
    def rows(self) -> dict[str, dict[str, Any]]:
        """The stored job rows by job key, in the order they were first written."""
        with self.engine.connect() as connection:
            found = connection.execute(select(JOBS).order_by(JOBS.c.id)).mappings()
            return {row["job_key"]: dict(row) for row in found}

    def only_row(self) -> dict[str, Any]:
        rows = self.rows
        assert len(rows) == 1, rows
        return next(iter(rows.values()))

    async def close(self) -> None:
        await self._real.aclose()
        await self.hud.ingestor.close()
        self.engine.dispose()

    async def __aenter__(self) -> StandInHud:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


def sandbox_github_client(
    sandbox: SandboxGitHub, store: StateStore, *, timeout: float = 0.5
) -> GitHubClient:
    """A GitHub client bound in-process to the sandbox, with short timeouts and backoff."""
    return GitHubClient(
        SANDBOX_API,
        sandbox.app.app_id,
        sandbox.app.private_key_pem,
        store,
        timeout=timeout,
        backoff_base=0.01,
        backoff_cap=0.05,
        transport=httpx.ASGITransport(app=create_sandbox_app(sandbox)),
    )


@dataclass
class StoreOpener:
    """Opens the same store again, as a restarted relay would."""

    kind: str
    path: Path
    redis_url: str | None = None
    prefix: str = ""

    async def open(self) -> StateStore:
        if self.kind == "sqlite":
            return await SqliteStateStore.open(self.path)
        assert self.redis_url is not None
        return RedisStateStore.from_url(self.redis_url, prefix=self.prefix)


@pytest.fixture(params=[pytest.param("redis", marks=pytest.mark.redis), "sqlite"])
async def opener(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StoreOpener]:
    """Where the state lives: a SQLite file or a Redis namespace of the test's own."""
    if request.param == "sqlite":
        yield StoreOpener("sqlite", tmp_path / "state.db")
        return
    url: str = request.getfixturevalue("redis_url")
    prefix: str = request.getfixturevalue("redis_namespace")
    yield StoreOpener("redis", tmp_path, url, prefix)


@pytest.fixture(scope="session")
def signing_key() -> SigningKey:
    return SigningKey.generate()


@pytest.fixture
def issuer(signing_key: SigningKey) -> SandboxIssuer:
    return SandboxIssuer(ISSUER_URL, key=signing_key)


@dataclass
class Relay:
    """One relay instance's downstream side, plus the pieces a test pokes at."""

    store: StateStore
    hud: StandInHud
    issuer: SandboxIssuer
    settings: Settings
    clock: Clock
    client: httpx.AsyncClient
    deps: CallbackDeps
    sweeper: Sweeper
    accepted: list[JobTransitioned] = field(default_factory=list)

    def token(self, repo: str = L2_REPO, **claims: Any) -> str:
        """A token for a job of `repo`'s run 9001 (`callback_body`'s) unless told otherwise."""
        claims.setdefault("run_id", DEFAULT_RUN_ID)
        return self.issuer.mint_actions_token(repo, audience=AUDIENCE, **claims)

    async def post(
        self,
        body: Mapping[str, Any] | bytes,
        *,
        repo: str = L2_REPO,
        token: str | None = None,
        headers: Mapping[str, str] | None = None,
        path: str = "/github/callback",
    ) -> httpx.Response:
        if token is None:
            token = self.token(repo, **run_claims(body))
        sent = {"authorization": f"Bearer {token}", **(headers or {})}
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return await self.client.post(path, content=content, headers=sent)

    async def dispatch(
        self,
        delivery_id: str,
        repo: str = L2_REPO,
        *,
        event_type: str = "pull_request",
        head_sha: str = HEAD_SHA,
        pr_number: int | None = PR_NUMBER,
        status: DispatchStatus = DispatchStatus.DISPATCHED,
    ) -> DispatchRecord:
        record = DispatchRecord(
            delivery_id=delivery_id,
            repo=repo,
            status=status,
            context=UpstreamContext(UPSTREAM, event_type, head_sha, pr_number),
            sent_at=self.clock(),
        )
        await self.store.put_dispatch(delivery_id, repo, record.to_store(), 3600)
        return record


DEFAULT_RUN_ID = "9001"


def run_claims(body: Mapping[str, Any] | bytes) -> dict[str, str]:
    """The run id and attempt GitHub would put in the token of the job sending `body`."""
    workflow = body.get("workflow") if isinstance(body, Mapping) else None
    if not isinstance(workflow, Mapping):
        return {}
    return {
        name: str(workflow[name])
        for name in ("run_id", "run_attempt")
        if isinstance(workflow.get(name), str | int)
    }


def callback_body(
    delivery_id: str,
    status: str = "in_progress",
    conclusion: str | None = None,
    *,
    run_id: str | int = DEFAULT_RUN_ID,
    run_attempt: str | int = "1",
    job_name: str = "test",
    head_sha: str = HEAD_SHA,
    pr_number: int = PR_NUMBER,
    event_type: str = "pull_request",
) -> dict[str, Any]:
    """A SPEC §5 body as the reporter builds it for a pull_request dispatch."""
    payload: dict[str, Any]
    if event_type == "pull_request":
        payload = {"pull_request": {"number": pr_number, "head": {"sha": head_sha}}}
    elif event_type == "push":
        payload = {"after": head_sha}
    else:
        payload = {}
    return {
        "event_type": event_type,
        "delivery_id": delivery_id,
        "payload": payload,
        "workflow": {
            "schema_version": "1",
            "status": status,
            "conclusion": conclusion,
            "name": "crcr",
            "url": f"https://github.com/{L2_REPO}/actions/runs/{run_id}",
            "run_id": run_id,
            "run_attempt": run_attempt,
            "job_name": job_name,
            "check_run_id": "456",
            "started_at": "2026-01-01T00:00:00Z",
            "completed_at": None,
        },
    }


async def build_relay(
    store: StateStore,
    hud: StandInHud,
    issuer: SandboxIssuer,
    clock: Clock,
    http: httpx.AsyncClient,
    *,
    transport: HudTransport | None = None,
    extra_issuers: Sequence[OidcIssuer] = (),
    **setting_overrides: Any,
) -> Relay:
    """Assemble one relay instance on `store` (call again on a reopened store to restart).

    `extra_issuers` are trusted besides the sandbox's GitHub issuer; `http` must reach
    their JWKS.
    """
    settings = Settings(
        upstream_repo=UPSTREAM,
        oidc_issuers=[OidcIssuer(issuer=ISSUER_URL, kind="github"), *extra_issuers],
        oidc_audience=AUDIENCE,
        hud_url=HUD_URL,
        hud_token=HUD_TOKEN,
        **{"rate_limit_per_min": 10_000, **setting_overrides},
    )
    allowlist = parse_allowlist(ALLOWLIST)

    async def current_allowlist() -> Allowlist:
        return allowlist

    forwarder = HudForwarder(
        transport or HttpHudTransport(HUD_URL, HUD_TOKEN, http, retry_delay=0.01),
        store,
        timeout=settings.hud_timeout,
    )
    accepted: list[JobTransitioned] = []

    async def record_accepted(event: JobTransitioned) -> None:
        accepted.append(event)

    deps = CallbackDeps(
        store=store,
        verifier=OidcVerifier(settings.oidc_issuers, AUDIENCE, store, http),
        allowlist=current_allowlist,
        forwarder=forwarder,
        settings=settings,
        clock=clock,
        on_accepted=[record_accepted],
    )
    app = FastAPI()
    app.include_router(callback_router(deps))
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://relay")
    sweeper = Sweeper(
        store,
        forwarder,
        settings,
        clock=clock,
        on_finalised=[record_accepted],
        backoff=Backoff(base=0.0),
    )
    return Relay(store, hud, issuer, settings, clock, client, deps, sweeper, accepted)


def outside_world(issuer: SandboxIssuer, hud: StandInHud) -> httpx.AsyncClient:
    """One HTTP client reaching the sandbox issuer and the HUD in process."""
    app = Starlette(routes=[Mount("/oidc", routes=issuer.routes()), Mount("/", app=hud.app)])
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app))


@pytest.fixture
async def relay(opener: StoreOpener, issuer: SandboxIssuer, tmp_path: Path) -> AsyncIterator[Relay]:
    """A relay on a fresh store, reporting to a HUD of its own that is up."""
    hud = StandInHud(tmp_path / "hud.db")
    store = await opener.open()
    async with outside_world(issuer, hud) as http:
        built = await build_relay(store, hud, issuer, Clock(), http)
        async with built.client:
            yield built
    await store.close()
    await hud.close()

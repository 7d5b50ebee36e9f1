"""Revocation delay: from the push webhook removing a backend to its first refusal elsewhere.

Run: `python -m bench.revocation [--rounds 10] [--redis-url redis://127.0.0.1:6379/0]`
(its Redis keys live under a prefix of their own and are deleted afterwards).

Two relay instances (two apps, each with its own state-store connections) share one
state store, SQLite file or Redis namespace; the allowlist is a GitHub blob of the
upstream, served by the in-process sandbox GitHub. Each round removes the backend from
the file, sends the push webhook to instance A, and probes instance B with the
backend's callbacks until one is answered 200 "ignored" (SPEC §5 step 2); then it puts
the backend back the same way. Prints the delays' median and maximum (goal ≤ 5 s).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import httpx
import redis.asyncio as redis
from starlette.applications import Starlette
from starlette.routing import Mount

from crcr.app import create_app
from crcr.config.settings import Settings, load_settings
from crcr.github.client import GitHubClient
from crcr.relay.webhook.signature import sign_body
from crcr.runtime import Runtime, open_runtime
from crcr.sandbox.github_identity import SandboxApp
from crcr.sandbox.github_server import create_sandbox_app
from crcr.sandbox.github_state import SandboxGitHub
from crcr.sandbox.oidc_issuer import SandboxIssuer
from crcr.sandbox.webhooks import push_event
from crcr.stores.redis.state import RedisStateStore
from crcr.stores.sqlite.state import SqliteStateStore
from crcr.stores.state import StateStore

UPSTREAM, BACKEND, OTHER = "pytorch/pytorch", "org/backend", "org/other"
PATH = ".github/crcr-allowlist.yml"
API, ISSUER, AUDIENCE, SECRET = "http://github.sandbox", "http://issuer/oidc", "bench", "s"
WITH, WITHOUT = f"L2:\n  - {OTHER}\n  - {BACKEND}\n", f"L2:\n  - {OTHER}\n"


@asynccontextmanager
async def instance(
    settings: Settings, store: StateStore, sandbox: SandboxGitHub, issuer: SandboxIssuer
) -> AsyncIterator[httpx.AsyncClient]:
    """One relay app on `store`, GitHub and the issuer served in process."""
    github = GitHubClient(
        API,
        sandbox.app.app_id,
        sandbox.app.private_key_pem,
        store,
        transport=httpx.ASGITransport(app=create_sandbox_app(sandbox)),
    )
    issuer_app = Starlette(routes=[Mount("/oidc", routes=issuer.routes())])
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=issuer_app))

    async def opened(s: Settings) -> Runtime:
        return await open_runtime(s, store=store, github=github, http=http)

    app = create_app(settings, runtime=opened, background=False)
    transport = httpx.ASGITransport(app=app)
    try:
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=transport, base_url="http://relay") as client,
        ):
            yield client
    finally:
        await http.aclose()
        await github.aclose()
        await store.close()


async def push(client: httpx.AsyncClient, sandbox: SandboxGitHub, allowlist: str) -> None:
    """Merge `allowlist` upstream and send the push webhook."""
    sandbox.add_file(UPSTREAM, PATH, allowlist)
    payload = push_event(repo=UPSTREAM, after=uuid.uuid4().hex + "00000000")
    payload["commits"][-1]["modified"] = [PATH]
    body = json.dumps(payload).encode()
    headers = {
        "X-GitHub-Event": "push",
        "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-Hub-Signature-256": sign_body(SECRET.encode(), body),
    }
    answer = await client.post("/github/webhook", content=body, headers=headers)
    assert answer.status_code == 200, answer.text


async def first_refusal(client: httpx.AsyncClient, issuer: SandboxIssuer, ignored: bool) -> None:
    """Probe until the backend is refused (`ignored`) or no longer refused."""
    token = issuer.mint_actions_token(BACKEND, audience=AUDIENCE, run_id="1")
    body = {
        "event_type": "pull_request",
        "delivery_id": "probe",
        "payload": {},
        "workflow": {"status": "in_progress", "name": "ci", "run_id": "1", "job_name": "t"},
    }
    while True:
        answer = await client.post(
            "/github/callback", json=body, headers={"authorization": f"Bearer {token}"}
        )
        if (answer.json() == {"status": "ignored"}) == ignored:
            return


async def measure(kind: str, rounds: int, redis_url: str, work: Path) -> list[float]:
    sandbox = SandboxGitHub(app=SandboxApp.generate())
    sandbox.install_app(UPSTREAM, BACKEND, OTHER)
    sandbox.add_file(UPSTREAM, PATH, WITH)
    issuer = SandboxIssuer(ISSUER)
    prefix = f"crcr-bench-{uuid.uuid4().hex[:8]}:"
    delays = []
    async with AsyncExitStack() as stack:
        clients = []
        for name in ("a", "b"):
            settings = load_settings(
                upstream_repo=UPSTREAM,
                webhook_secret=SECRET,
                github_app_id=str(sandbox.app.app_id),
                github_app_private_key=sandbox.app.private_key_pem,
                github_api_url=API,
                allowlist=f"https://github.com/{UPSTREAM}/blob/main/{PATH}",
                oidc_issuers=[{"issuer": ISSUER, "kind": "github"}],
                oidc_audience=AUDIENCE,
                data_dir=work / kind / name,
            )
            store: StateStore = (
                await SqliteStateStore.open(work / f"{kind}.db")
                if kind == "sqlite"
                else RedisStateStore.from_url(redis_url, prefix=prefix)
            )
            clients.append(
                await stack.enter_async_context(instance(settings, store, sandbox, issuer))
            )
        a, b = clients
        for _ in range(rounds):
            pushed = time.monotonic()
            await push(a, sandbox, WITHOUT)
            await first_refusal(b, issuer, ignored=True)
            delays.append(time.monotonic() - pushed)
            await push(a, sandbox, WITH)
            await first_refusal(b, issuer, ignored=False)
    if kind == "redis":
        await forget(redis_url, prefix)
    return delays


async def forget(redis_url: str, prefix: str) -> None:
    """Delete a run's keys under `prefix` (the allowlist stamp never expires)."""
    client = redis.Redis.from_url(redis_url)
    try:
        async for key in client.scan_iter(match=f"{prefix}*", count=1000):
            await client.delete(key)
    finally:
        await client.aclose()


async def main(rounds: int, redis_url: str) -> None:
    logging.getLogger("crcr").setLevel(logging.ERROR)  # a refused probe logs a WARNING
    with tempfile.TemporaryDirectory(prefix="crcr-bench-") as tmp:
        for kind in ("sqlite", "redis"):
            delays = await measure(kind, rounds, redis_url, Path(tmp))
            print(
                f"{kind}: push webhook to first refusal on the other instance, {rounds} rounds:"
                f" median {statistics.median(delays):.3f} s, max {max(delays):.3f} s"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.rounds, arguments.redis_url))

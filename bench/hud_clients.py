"""The forward's HTTP client alone: CPU per 26 KB POST to one keep-alive HTTPS origin.

Run: `python -m bench.hud_clients [--requests 6000] [--concurrency 64] [--rounds 3]`.

Issue 34 asks which well-kept client costs the relay least for its one origin, the HUD.
Each candidate posts the same ~26 KB body (a callback's results body with its echoed
payload) to `bench.hud_stub` over HTTPS (uvicorn, TLS with a certificate made for the
run) from this process, `--concurrency` at a time, spread over 16 pools of 4 keep-alive
connections as the relay's `ClientPools` does; CPU is this process's, per request.
Candidates run in turns, `--rounds` times, so a drift of the machine weighs on all alike:

- `httpx`: `httpx.AsyncClient.post`, as `HttpHudTransport` sends today;
- `httpx-transport`: httpx's public transport API (`AsyncHTTPTransport.handle_async_request`),
  without the client's layers (URL merging, cookies, auth and redirect hooks);
- `httpcore`: httpx's own connection pool (`httpcore.AsyncConnectionPool.request`)
  used directly, without httpx's request/response models, auth and redirect layers.

aiohttp's client and HTTP/2 (httpx with `h2`) are not installed in this project; the
module measures what is, and the note in docs/benchmarks.md says what that leaves open.
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
import statistics
import time
from collections.abc import Awaitable, Callable
from itertools import cycle
from pathlib import Path

import httpcore
import httpx
import uvloop

from bench.callback_load import FIRST_RUN_ID, bench_repos, callback_body, job
from bench.hud_http import https_hud

POOLS, PER_POOL = 16, 4
Post = Callable[[], Awaitable[int]]
Close = Callable[[], Awaitable[None]]


def results_body() -> bytes:
    """A callback body of the callback benchmarks: ~26 KB, as the forward sends."""
    work = job(0, bench_repos(1), 1, 1)
    assert int(work.run_id) >= FIRST_RUN_ID
    return callback_body(work, "completed")


async def with_httpx(url: str, context: ssl.SSLContext, body: bytes) -> tuple[Post, Close]:
    limits = httpx.Limits(max_connections=PER_POOL, max_keepalive_connections=PER_POOL)
    clients = [httpx.AsyncClient(verify=context, limits=limits) for _ in range(POOLS)]
    turn = cycle(clients)
    headers = {"content-type": "application/json"}

    async def post() -> int:
        response = await next(turn).post(url, content=body, headers=headers)
        return response.status_code

    async def close() -> None:
        for client in clients:
            await client.aclose()

    return post, close


async def with_httpcore(url: str, context: ssl.SSLContext, body: bytes) -> tuple[Post, Close]:
    pools = [
        httpcore.AsyncConnectionPool(ssl_context=context, max_connections=PER_POOL)
        for _ in range(POOLS)
    ]
    turn = cycle(pools)
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]

    async def post() -> int:
        response = await next(turn).request("POST", url, headers=headers, content=body)
        return response.status

    async def close() -> None:
        for pool in pools:
            await pool.aclose()

    return post, close


async def with_transport(url: str, context: ssl.SSLContext, body: bytes) -> tuple[Post, Close]:
    limits = httpx.Limits(max_connections=PER_POOL, max_keepalive_connections=PER_POOL)
    transports = [httpx.AsyncHTTPTransport(verify=context, limits=limits) for _ in range(POOLS)]
    turn = cycle(transports)
    headers = {"content-type": "application/json"}

    async def post() -> int:
        request = httpx.Request("POST", url, headers=headers, content=body)
        response = await next(turn).handle_async_request(request)
        await response.aread()
        await response.aclose()
        return response.status_code

    async def close() -> None:
        for transport in transports:
            await transport.aclose()

    return post, close


CANDIDATES = {"httpx": with_httpx, "httpx-transport": with_transport, "httpcore": with_httpcore}


async def cpu_per_request(post: Post, requests: int, concurrency: int) -> float:
    pending = iter(range(requests))

    async def worker() -> None:
        for _ in pending:
            if await post() != 200:
                raise RuntimeError("the stub did not answer 200")

    started = time.process_time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return 1e6 * (time.process_time() - started) / requests


async def compare(url: str, cert: Path, args: argparse.Namespace) -> None:
    context = ssl.create_default_context(cafile=str(cert))
    body = results_body()
    measured: dict[str, list[float]] = {name: [] for name in CANDIDATES}
    for _ in range(args.rounds):
        for name, build in CANDIDATES.items():
            post, close = await build(url, context, body)
            await cpu_per_request(post, 200, args.concurrency)  # connections, handshakes
            measured[name].append(await cpu_per_request(post, args.requests, args.concurrency))
            await close()
    print(f"{len(body):,} B body, {args.concurrency} in flight, µs CPU per request (client):")
    for name, values in measured.items():
        runs = ", ".join(f"{v:.0f}" for v in values)
        print(f"  {name:15} median {statistics.median(values):.0f} ({runs})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=6000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with https_hud("stub") as (url, cert):
        uvloop.run(compare(url, cert, args))


if __name__ == "__main__":
    main()

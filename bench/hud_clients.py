"""The forward's HTTP client alone: CPU per 26 KB POST to one keep-alive HTTPS origin.

Run: `python -m bench.hud_clients [--requests 6000] [--concurrency 64] [--rounds 3]
[--server stub|stub-h2] [--only NAME …]`.

Issue 34 asks which well-kept client costs the relay least for its one origin, the HUD.
Each candidate posts the same ~26 KB body (a callback's results body with its echoed
payload) to `bench.hud_stub` over HTTPS (TLS with a certificate made for the run) from
this process, `--concurrency` at a time; CPU is this process's, per request. The HTTP/1.1
candidates spread their requests over 16 pools of 4 keep-alive connections, as the
relay's pools do. Candidates run in turns, `--rounds` times, so a drift of the machine
weighs on all alike:

- `httpx`: `httpx.AsyncClient.post`, as `HttpHudTransport` sent before issue 34;
- `httpx-transport`: httpx's public transport API (`AsyncHTTPTransport.handle_async_request`),
  without the client's layers (URL merging, cookies, auth and redirect hooks);
- `httpx-transport-gzip`: the same with the body gzipped (level 1) on every request;
- `httpcore`: httpx's own connection pool (`httpcore.AsyncConnectionPool.request`)
  used directly, without httpx's request/response models, auth and redirect layers;
- `aiohttp`: `aiohttp.ClientSession.post` on one connector of 64 keep-alive connections
  (its pool hands out an idle connection without scanning the others);
- `aiohttp-gzip`: the same with the body gzipped (level 1) on every request;
- `httpx-h2`: httpx's transport with HTTP/2 (`h2`): one connection, many streams. Only
  against `--server stub-h2` (granian, HTTP/2 by ALPN); with `stub` (uvicorn, HTTP/1.1
  only) it is skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import ssl
import statistics
import time
from collections.abc import Awaitable, Callable
from itertools import cycle
from pathlib import Path

import aiohttp
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


async def with_transport_gzip(url: str, context: ssl.SSLContext, body: bytes) -> tuple[Post, Close]:
    limits = httpx.Limits(max_connections=PER_POOL, max_keepalive_connections=PER_POOL)
    transports = [httpx.AsyncHTTPTransport(verify=context, limits=limits) for _ in range(POOLS)]
    turn = cycle(transports)
    headers = {"content-type": "application/json", "content-encoding": "gzip"}

    async def post() -> int:
        content = gzip.compress(body, compresslevel=1, mtime=0)
        request = httpx.Request("POST", url, headers=headers, content=content)
        response = await next(turn).handle_async_request(request)
        await response.aread()
        await response.aclose()
        return response.status_code

    async def close() -> None:
        for transport in transports:
            await transport.aclose()

    return post, close


async def with_aiohttp(url: str, context: ssl.SSLContext, body: bytes) -> tuple[Post, Close]:
    connector = aiohttp.TCPConnector(ssl=context, limit=POOLS * PER_POOL)
    session = aiohttp.ClientSession(connector=connector)
    headers = {"content-type": "application/json"}

    async def post() -> int:
        async with session.post(url, data=body, headers=headers) as response:
            await response.read()
            return response.status

    async def close() -> None:
        await session.close()

    return post, close


async def with_aiohttp_gzip(url: str, context: ssl.SSLContext, body: bytes) -> tuple[Post, Close]:
    connector = aiohttp.TCPConnector(ssl=context, limit=POOLS * PER_POOL)
    session = aiohttp.ClientSession(connector=connector)
    headers = {"content-type": "application/json", "content-encoding": "gzip"}

    async def post() -> int:
        content = gzip.compress(body, compresslevel=1, mtime=0)
        async with session.post(url, data=content, headers=headers) as response:
            await response.read()
            return response.status

    async def close() -> None:
        await session.close()

    return post, close


async def with_h2(url: str, context: ssl.SSLContext, body: bytes) -> tuple[Post, Close]:
    transport = httpx.AsyncHTTPTransport(verify=context, http1=False, http2=True)
    headers = {"content-type": "application/json"}

    async def post() -> int:
        request = httpx.Request("POST", url, headers=headers, content=body)
        response = await transport.handle_async_request(request)
        await response.aread()
        await response.aclose()
        if response.extensions.get("http_version") != b"HTTP/2":
            raise RuntimeError("the stub did not speak HTTP/2")
        return response.status_code

    async def close() -> None:
        await transport.aclose()

    return post, close


CANDIDATES = {
    "httpx": with_httpx,
    "httpx-transport": with_transport,
    "httpx-transport-gzip": with_transport_gzip,
    "httpcore": with_httpcore,
    "aiohttp": with_aiohttp,
    "aiohttp-gzip": with_aiohttp_gzip,
    "httpx-h2": with_h2,
}
H2_ONLY = {"httpx-h2"}


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
    names = [
        name for name in args.only or CANDIDATES if args.server == "stub-h2" or name not in H2_ONLY
    ]
    measured: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(args.rounds):
        for name in names:
            build = CANDIDATES[name]
            post, close = await build(url, context, body)
            await cpu_per_request(post, 200, args.concurrency)  # connections, handshakes
            measured[name].append(await cpu_per_request(post, args.requests, args.concurrency))
            await close()
    print(
        f"{len(body):,} B body ({len(gzip.compress(body, compresslevel=1)):,} B gzipped),"
        f" {args.concurrency} in flight, server {args.server}, µs CPU per request (client):"
    )
    for name, values in measured.items():
        runs = ", ".join(f"{v:.0f}" for v in values)
        print(f"  {name:21} median {statistics.median(values):.0f} ({runs})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=6000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--server", choices=("stub", "stub-h2"), default="stub")
    parser.add_argument("--only", nargs="+", choices=sorted(CANDIDATES))
    args = parser.parse_args()
    with https_hud(args.server) as (url, cert):
        uvloop.run(compare(url, cert, args))


if __name__ == "__main__":
    main()

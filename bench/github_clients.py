"""HTTP clients for GitHub's calls, side by side: CPU per dispatch-sized POST, and wall time.

Run: `python -m bench.github_clients [--requests 1000] [--concurrency 100] [--rounds 3]`.

A server in a child process answers every POST after 50 ms with 204 (as GitHub answers
a dispatch); this process sends 25 KB bodies through each candidate in turn, round
after round, and reports the client's CPU per request (this process's CPU time over
the requests) and the wall time of each round. Candidates: httpx's transport on pools of
4 connections (the relay before issue 34), the same over HTTP/2 on one connection (only
when `h2` and `granian` are installed: the server is then granian, serving h2c), and
and the relay's own wire (`crcr.github.aiohttp_wire`: aiohttp's pool, no httpx models);
the httpx candidates are sent as `HttpxWire` sends a test's transport.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx

from crcr.github.aiohttp_wire import AiohttpWire
from crcr.github.wire import HttpxWire, Wire

BODY = b'{"event_type":"ci","client_payload":{"x":"' + b"a" * 25_000 + b'"}}'
SERVER = """
import asyncio
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    more = True
    while more:
        more = (await receive()).get("more_body", False)
    await asyncio.sleep(0.05)
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def server(http2: bool, directory: str) -> Iterator[str]:
    """The 50 ms server in a child process: uvicorn for HTTP/1.1, granian for h2c."""
    port = free_port()
    if http2:
        command = ["-m", "granian", "--interface", "asgi", "--http", "2", "--loop", "asyncio"]
        command += ["--port", str(port), "--workers", "1", "bench_server:app"]
    else:
        command = ["-m", "uvicorn", "--port", str(port), "--log-level", "warning"]
        command += ["bench_server:app"]
    child = subprocess.Popen([sys.executable, *command], cwd=directory)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the bench server did not start") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        child.terminate()
        child.wait(timeout=30)


def httpx_pools(http2: bool) -> list[Wire]:
    if http2:
        return transports_wire([httpx.AsyncHTTPTransport(http1=False, http2=True)])
    limits = httpx.Limits(max_connections=4, max_keepalive_connections=4)
    return transports_wire([httpx.AsyncHTTPTransport(limits=limits) for _ in range(32)])


HEADERS = {"authorization": "token x", "content-type": "application/json"}


def transports_wire(transports: list[httpx.AsyncBaseTransport]) -> list[Wire]:
    """httpx transports, each as a wire (the request and response as httpx's models)."""
    return [HttpxWire(transport, deadline=10) for transport in transports]


async def rounds(
    wires: list[Wire], url: str, requests: int, concurrency: int, n: int
) -> list[tuple[float, float]]:
    """(CPU µs per request, wall ms) for each of `n` rounds, after one warm-up round."""
    gate = asyncio.Semaphore(concurrency)

    async def one(k: int) -> None:
        async with gate:
            answer = await wires[k % len(wires)].send(
                "POST", f"{url}/repos/o/r{k}/dispatches", HEADERS, BODY
            )
            if answer.status_code != 204:
                raise RuntimeError(f"answered {answer.status_code}")

    results = []
    for attempt in range(n + 1):
        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.gather(*map(one, range(requests)))
        if attempt:
            cpu_us = (time.process_time() - cpu) * 1e6 / requests
            results.append((cpu_us, (time.perf_counter() - wall) * 1000))
    for wire in wires:
        await wire.aclose()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    h2 = all(importlib.util.find_spec(name) for name in ("h2", "granian"))
    candidates: list[tuple[str, bool, Callable[[], list[Wire]]]] = [
        ("httpx transport, HTTP/1.1, 32 pools of 4", False, lambda: httpx_pools(False)),
        ("aiohttp wire (AiohttpWire), HTTP/1.1", False, lambda: [aiohttp_wire()]),
    ]
    if h2:
        h2_name = "httpx transport, HTTP/2 (h2c), 1 connection"
        candidates.append((h2_name, True, lambda: httpx_pools(True)))
    else:
        print("HTTP/2 left out: needs h2 and granian installed")
    with tempfile.TemporaryDirectory() as directory:
        with open(f"{directory}/bench_server.py", "w") as module:
            module.write(SERVER)
        for name, http2, make in candidates:
            with server(http2, directory) as url:
                measured = asyncio.run(
                    rounds(make(), url, args.requests, args.concurrency, args.rounds)
                )
            cpu = statistics.median(c for c, _ in measured)
            wall = statistics.median(w for _, w in measured)
            print(f"{name:<46} CPU/request {cpu:6.0f} µs  wall {wall:6.0f} ms", flush=True)


def aiohttp_wire() -> Wire:
    return AiohttpWire(connections=128, keepalive_seconds=30, deadline=10)


if __name__ == "__main__":
    main()

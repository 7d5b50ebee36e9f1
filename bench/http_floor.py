"""The HTTP server's own floor: what uvicorn costs per callback before the relay does anything.

Run: `python -m bench.http_floor [--workers 1 2] [--concurrency 64] [--seconds 8]`.

uvicorn is started as `crcr serve` starts it (uvloop, httptools, the same workers, no
access log) around an app that only reads the body and answers `{"status":"accepted"}`,
and `bench.callbacks`' load generator sends it the same requests as the relay gets (the
~26 KB callback bodies, kept-alive connections, a bearer token of a real token's
length). Its "relay CPU" column is the server's floor per request: with
`bench.callback_floor`'s pieces and the generator's and Redis's CPU, it bounds the
callbacks a second that two cores can give at all (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from bench.callback_load import bench_repos
from bench.callbacks import HEADER, Relay, free_port, row, run_load, summarise, wait_ready

ACCEPTED = b'{"status":"accepted"}'
TOKEN_CHARS = 1_100
"""About the length of a GitHub Actions OIDC token (header, claims, RS256 signature)."""


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Read the whole body, answer as the callback endpoint answers an accepted callback."""
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    headers = [(b"content-type", b"application/json"), (b"content-length", b"21")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": ACCEPTED})


@contextmanager
def running_server(args: argparse.Namespace, workers: int) -> Iterator[Relay]:
    port = free_port()
    command = [sys.executable, "-m", "uvicorn", "bench.http_floor:app", "--port", str(port)]
    command += ["--workers", str(workers), "--loop", "uvloop", "--http", "httptools"]
    command += ["--no-access-log", "--log-level", "warning"]
    process = subprocess.Popen(command)
    tokens = {repo: ["t" * TOKEN_CHARS] * args.tokens_per_repo for repo in bench_repos(args.repos)}
    try:
        wait_ready(f"http://127.0.0.1:{port}", process)
        yield Relay(process, port, tokens)
    finally:
        process.terminate()
        process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/13", help="for its CPU")
    args = parser.parse_args()
    # What `run_load` reads of a `bench.callbacks` command line.
    args.repos, args.deliveries, args.tokens_per_repo = 50, 200, 10
    args.rate, args.fresh_connections, args.py_spy = None, False, None
    print(HEADER, flush=True)
    for workers in args.workers:
        with running_server(args, workers) as server:
            warm = run_load(server, args, 8 * workers, args.warmup, 0)
            result = run_load(server, args, args.concurrency, args.seconds, warm["jobs"])
            print(row(summarise(workers, args.concurrency, result)), flush=True)


if __name__ == "__main__":
    main()

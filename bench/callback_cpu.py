"""CPU per callback through the relay app itself: no HTTP server, no load generator.

Run: `python -m bench.callback_cpu [--callbacks 2000] [--concurrency 16] [--state sqlite]
[--no-audit]`, or under py-spy to see where a callback's CPU goes. `--no-audit` leaves
the audit trail out (its log line and its writes), to measure what it costs.

The app is built as `crcr serve` builds it (Redis state, the in-process SQLite HUD, the
serving GC settings; the sweeper left out, as its timed work is not callback work) and
driven through ASGI by `--concurrency` clients, each sending a job's `in_progress` then
its `completed` callback, with the bodies and tokens of `bench.callbacks` made before
the clock starts. It prints the process CPU per callback: quieter than the end-to-end
bench, but it still drifts with the VM. Instruction counts of it under callgrind are
not reproducible (the issuer's and the checkpoints' threads, timed work stretched by the
instrumentation); `bench.hud_write`'s are.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from collections import Counter
from typing import Any

import uvloop

from bench.callback_load import FIRST_RUN_ID, bench_repos, callback_body, job
from bench.callbacks import DEFAULT_REDIS_URL, relay_world
from crcr.app import create_app
from crcr.gc_tuning import freeze_what_exists, tune_for_serving
from crcr.logging_setup import configure_logging
from crcr.settings import load_settings

Message = dict[str, Any]


async def post(app: Any, token: str, body: bytes) -> tuple[int, bytes]:
    """One callback through the app, as uvicorn would hand it over."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/github/callback",
        "raw_path": b"/github/callback",
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"relay"),
            (b"authorization", f"Bearer {token}".encode()),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }
    sent: list[Message] = []
    delivered = False

    async def receive() -> Message:
        nonlocal delivered
        if delivered:
            await asyncio.Event().wait()  # nothing more: the client stays connected
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return status, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


async def drive(args: argparse.Namespace, tokens: dict[str, list[str]]) -> None:
    repos = bench_repos(args.repos)
    requests = [
        (tokens[work.repo][int(work.run_id) - FIRST_RUN_ID], callback_body(work, status))
        for n in range(args.callbacks // 2)
        for work in [job(n, repos, args.deliveries, args.tokens_per_repo)]
        for status in ("in_progress", "completed")
    ]
    app = create_app(load_settings(), background=False, started=freeze_what_exists)
    tune_for_serving()
    answers: Counter[str] = Counter()
    async with app.router.lifespan_context(app):  # startup and shutdown, as uvicorn runs them
        if args.no_audit:
            app.state.runtime.callback.audit = None
        pending = iter(range(0, len(requests), 2))

        async def client() -> None:
            for first in pending:
                for token, body in requests[first : first + 2]:
                    status, answer = await post(app, token, body)
                    answers[f"{status} {answer[:40]!r}"] += 1

        started = time.process_time()
        await asyncio.gather(*(client() for _ in range(args.concurrency)))
        if app.state.runtime.audit is not None:
            await app.state.runtime.audit.flush()  # its writes are part of the cost
        cpu = time.process_time() - started
    print(
        f"{len(requests)} callbacks: {1e6 * cpu / len(requests):.0f} µs CPU each; {dict(answers)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--callbacks", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--repos", type=int, default=50)
    parser.add_argument("--deliveries", type=int, default=200)
    parser.add_argument("--tokens-per-repo", type=int, default=10)
    parser.add_argument("--rate-limit", type=int, default=1_000_000)
    parser.add_argument("--redis-url", default=DEFAULT_REDIS_URL)
    parser.add_argument("--state", choices=("redis", "sqlite"), default="redis")
    parser.add_argument("--no-audit", action="store_true", help="leave the audit trail out")
    parser.add_argument(
        "--json-logs", action="store_true", help="log as `crcr serve` does (JSON at INFO)"
    )
    parser.add_argument(
        "--relay-env", action="append", default=[], help="KEY=VALUE for the relay's environment"
    )
    args = parser.parse_args()
    if args.json_logs:
        configure_logging("info", "json")
    with relay_world(args) as world:
        os.environ.update(world.env)
        uvloop.run(drive(args, world.tokens))


if __name__ == "__main__":
    main()

"""CPU per callback through the relay app itself: no HTTP server, no load generator.

Run: `python -m bench.callback_cpu [--callbacks 2000] [--concurrency 16] [--state sqlite]
[--no-audit | --alternate CHECK --blocks N]`, or under py-spy to see where a callback's
CPU goes. `--no-audit` leaves the audit trail out (its log line and its writes);
`--alternate CHECK` measures one check's share in one process, in blocks with and
without it (`bench.callback_checks` names them: audit, token-binding, url-pinning,
job-count, sanitising, confirm; and job-count-trip, which compares the job count riding
the transition with the count on a round trip of its own, as before issue 34);
`--alternate-audit BLOCKS` is `--alternate audit`.

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
import statistics
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import nullcontext
from typing import Any

import uvloop

from bench.callback_checks import CHECKS
from bench.callback_load import FIRST_RUN_ID, bench_repos, callback_body, job
from bench.callbacks import DEFAULT_REDIS_URL, relay_world
from crcr.app import create_app
from crcr.config.logging_setup import configure_logging
from crcr.config.settings import load_settings
from crcr.ops.gc_tuning import freeze_what_exists, tune_for_serving

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


Requests = list[tuple[str, bytes]]
"""(token, body) per callback: each job's `in_progress`, then its `completed`."""


def callback_requests(
    args: argparse.Namespace, tokens: dict[str, list[str]], first_job: int, jobs: int
) -> Requests:
    """The two callbacks of each of `jobs` distinct jobs, made before any clock starts."""
    repos = bench_repos(args.repos)
    return [
        (tokens[work.repo][int(work.run_id) - FIRST_RUN_ID], callback_body(work, status))
        for n in range(first_job, first_job + jobs)
        for work in [job(n, repos, args.deliveries, args.tokens_per_repo)]
        for status in ("in_progress", "completed")
    ]


async def send_all(app: Any, requests: Requests, concurrency: int, answers: Counter[str]) -> None:
    """Each job's two callbacks in turn, by `concurrency` clients; answers counted."""
    pending = iter(range(0, len(requests), 2))

    async def client() -> None:
        for first in pending:
            for token, body in requests[first : first + 2]:
                status, answer = await post(app, token, body)
                answers[f"{status} {answer[:40]!r}"] += 1

    await asyncio.gather(*(client() for _ in range(concurrency)))


async def drive(args: argparse.Namespace, tokens: dict[str, list[str]]) -> None:
    requests = callback_requests(args, tokens, 0, args.callbacks // 2)
    app = create_app(load_settings(), background=False, started=freeze_what_exists)
    tune_for_serving()
    answers: Counter[str] = Counter()
    check = args.alternate or "audit"
    leave_out = CHECKS[check]
    async with app.router.lifespan_context(app):  # startup and shutdown, as uvicorn runs them
        runtime = app.state.runtime

        async def cpu_per_callback(block: Requests, checked: bool) -> float:
            checked = checked and not args.alternate_control
            with nullcontext() if checked else leave_out(runtime):
                started = time.process_time()
                await send_all(app, block, args.concurrency, answers)
                if runtime.callback.audit is not None:
                    await runtime.callback.audit.flush()  # its writes are part of the cost
                return 1e6 * (time.process_time() - started) / len(block)

        if args.alternate:
            if args.alternate_control:
                print(f"A-A control, no {check} on either side:", end=" ")
            await alternate(args.blocks, requests, cpu_per_callback, check)
        else:
            # First calls (imports on first use, statements compiled, Redis's scripts,
            # the issuer's keys) are the process's start, not any callback's cost.
            warm_up = callback_requests(args, tokens, args.callbacks // 2, args.warm_up // 2)
            await send_all(app, warm_up, args.concurrency, Counter())
            cpu = await cpu_per_callback(requests, checked=not args.no_audit)
            print(f"{len(requests)} callbacks: {cpu:.0f} µs CPU each", end="; ")
    print(dict(answers))


async def alternate(
    blocks: int,
    requests: Requests,
    cpu_per_callback: Callable[[Requests, bool], Awaitable[float]],
    check: str = "audit",
) -> None:
    """A check's share (the audit trail's, first): blocks with and without it in one
    process, in turns.

    Separate runs of one configuration spread by ±15 % (the VM, the allocator, Redis's
    own state), more than the share to be shown; blocks in one process, paired A-B then
    B-A so a drift weighs on both sides alike. Blocks still spread by ~15 % (a pair's
    difference has a standard deviation of ~170 µs at 132 callbacks a block), so it
    takes many small ones: 150 pairs put the standard error near 1 %, and two A-A runs
    (`--alternate-control`) measured +0.2 and -0.2 ± 1.2 %. An audited block ends when
    its entries are stored: one batch of a block's entries, smaller than the ~300
    (SQLite) to 500 (Redis) that the writer's 1 s linger gathers under load, so the
    share shown errs high. A first block warms up (first calls, caches, Redis's
    scripts) and is not counted.
    """
    pairs = blocks // 2
    size = len(requests) // (2 * pairs + 1) // 2 * 2  # whole jobs: in_progress, completed
    warm_up = requests[2 * pairs * size : (2 * pairs + 1) * size]
    await cpu_per_callback(warm_up, True)  # first calls, caches, Redis's scripts
    differences, with_audit, without = [], [], []
    for pair in range(pairs):
        order = (True, False) if pair % 2 == 0 else (False, True)
        cpu: dict[bool, float] = {}
        for audited in order:
            first = (2 * pair + len(cpu)) * size
            cpu[audited] = await cpu_per_callback(requests[first : first + size], audited)
        with_audit.append(cpu[True])
        without.append(cpu[False])
        differences.append(cpu[True] - cpu[False])
    base, change = statistics.mean(without), statistics.mean(differences)
    error = statistics.stdev(differences) / len(differences) ** 0.5
    print(
        f"{pairs} pairs of {size} callbacks: {statistics.mean(with_audit):.0f} µs with "
        f"{check}, {base:.0f} without (means); difference {change:+.1f} ± {error:.1f} µs "
        f"({100 * change / base:+.2f} ± {100 * error / base:.2f} %, mean ± standard error; "
        f"median {statistics.median(differences):+.0f} µs)",
        end="; ",
    )


def add_world_options(parser: argparse.ArgumentParser) -> None:
    """The options of the relay world and its clients, shared with `bench.heap_growth`."""
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--repos", type=int, default=50)
    parser.add_argument("--deliveries", type=int, default=200)
    parser.add_argument("--tokens-per-repo", type=int, default=10)
    parser.add_argument("--rate-limit", type=int, default=1_000_000)
    parser.add_argument("--redis-url", default=DEFAULT_REDIS_URL)
    parser.add_argument("--state", choices=("redis", "sqlite"), default="redis")
    parser.add_argument(
        "--relay-env", action="append", default=[], help="KEY=VALUE for the relay's environment"
    )


def run_in_world(
    args: argparse.Namespace,
    drive: Callable[[argparse.Namespace, dict[str, list[str]]], Coroutine[Any, Any, None]],
) -> None:
    """`drive` the app, on uvloop, in a fresh relay world whose settings it reads."""
    with relay_world(args) as world:
        os.environ.update(world.env)
        uvloop.run(drive(args, world.tokens))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--callbacks", type=int, default=2000)
    parser.add_argument(
        "--warm-up", type=int, default=400, help="callbacks sent first, not counted"
    )
    add_world_options(parser)
    parser.add_argument("--no-audit", action="store_true", help="leave the audit trail out")
    parser.add_argument(
        "--alternate",
        choices=sorted(CHECKS),
        help="blocks with and without this check in turns (its share of a callback's CPU)",
    )
    parser.add_argument("--blocks", type=int, default=300, help="with --alternate")
    parser.add_argument(
        "--alternate-audit",
        type=int,
        metavar="BLOCKS",
        default=0,
        help="--alternate audit --blocks BLOCKS",
    )
    parser.add_argument(
        "--alternate-control",
        action="store_true",
        help="with --alternate: both sides without the check (shows the method's bias)",
    )
    parser.add_argument(
        "--json-logs", action="store_true", help="log as `crcr serve` does (JSON at INFO)"
    )
    args = parser.parse_args()
    if args.alternate_audit:
        args.alternate, args.blocks = "audit", args.alternate_audit
    if args.json_logs:
        configure_logging("info", "json")
    run_in_world(args, drive)


if __name__ == "__main__":
    main()

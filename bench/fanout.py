"""Webhook fan-out: response time and GitHub calls per repo, cold and warm token caches.

Run: `python -m bench.fanout [--sizes 10 100 300] [--latency 0.05] [--events 20]
[--concurrency 100] [--state sqlite|redis --redis-url redis://127.0.0.1:6379/10]`.

Everything talks real HTTP on loopback: the sandbox GitHub (every call answered after
`--latency` seconds) runs in a child process, so its CPU is not charged to the relay; the
relay runs under uvicorn in a thread, and this process posts signed webhooks to it as
GitHub would, from its main thread, whose CPU is not counted as the relay's (the relay's
CPU is the process's minus that thread's: its event loop and its store's threads; the
process's, as measured before, is printed beside it, and the sandbox's own CPU, which
GitHub's servers would spend). "Cold" is a relay started on an
empty state store (no installation ids, tokens or App JWT cached); "warm"
is the same relay after its first event, once its sweeper's first pass has followed
every allowlisted repo's level (a cost paid once per store, not per event). With
`--state redis` each cold start flushes the Redis database it is given.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import redis

from bench.fanout_sandbox import bench_repos
from bench.serving import serve_in_thread
from crcr.app import create_app
from crcr.config.settings import Settings, load_settings
from crcr.ops.gc_tuning import freeze_what_exists, tune_for_serving
from crcr.relay.levels.standing import EPISODE, LEVEL
from crcr.relay.webhook.signature import sign_body
from crcr.sandbox.webhooks import pull_request_event
from crcr.stores.factory import open_state_store

SECRET = "bench-secret"


@dataclass
class Sample:
    seconds: float
    github_calls: int
    cpu_seconds: float = 0.0
    process_cpu_seconds: float = 0.0
    sandbox_cpu_seconds: float = 0.0


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def post_event(client: httpx.AsyncClient, url: str, number: int) -> float:
    payload = pull_request_event("opened", number=number)
    body = json.dumps(payload).encode()
    headers = {
        "X-GitHub-Event": "pull_request",
        "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-Hub-Signature-256": sign_body(SECRET.encode(), body),
        "Content-Type": "application/json",
    }
    started = time.perf_counter()
    response = await client.post(f"{url}/github/webhook", content=body, headers=headers)
    elapsed = time.perf_counter() - started
    if response.status_code != 200 or response.json()["failed"]:
        raise RuntimeError(f"webhook failed: {response.status_code} {response.text[:300]}")
    return elapsed


@dataclass(frozen=True)
class SandboxChild:
    """The sandbox's process (`bench.fanout_sandbox`): where it serves, and its App."""

    url: str
    app_id: str
    private_key_pem: str
    process: subprocess.Popen[str]

    def calls(self) -> tuple[int, float]:
        """GitHub calls the sandbox has answered, and the CPU time it has spent."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("calls\n")
        self.process.stdin.flush()
        answer = json.loads(self.process.stdout.readline())
        return int(answer["calls"]), float(answer["cpu"])


@contextmanager
def sandbox_process(n: int, latency: float) -> Iterator[SandboxChild]:
    child = subprocess.Popen(
        [sys.executable, "-m", "bench.fanout_sandbox", str(n), str(latency)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdin is not None
    try:
        info = json.loads(child.stdout.readline())
        pem_lines: list[str] = []
        while not pem_lines or "END" not in pem_lines[-1]:
            pem_lines.append(child.stdout.readline())
        yield SandboxChild(info["url"], str(info["app_id"]), "".join(pem_lines), child)
    finally:
        child.stdin.close()
        child.wait(timeout=30)


@dataclass(frozen=True)
class RelaySetup:
    """What the relay under test runs with, besides the sandbox it talks to."""

    concurrency: int
    redis_url: str | None


async def levels_followed(settings: Settings, n: int, limit: float = 600.0) -> None:
    """Wait until the relay's first sweeper pass has followed every repo's level.

    That pass writes one level record and then one episode per allowlisted repo (at
    N = 1,000, tens of seconds on SQLite): a once-per-store start-up cost that would
    otherwise land on the warm events' CPU.
    """
    store = await open_state_store(settings)
    try:
        deadline = time.monotonic() + limit
        # The level records come first, each backend's opening episode after it.
        while len(await store.governance(LEVEL)) < n or len(await store.governance(EPISODE)) < n:
            if time.monotonic() > deadline:
                raise RuntimeError("the relay's sweeper did not follow every level in time")
            await asyncio.sleep(0.5)
    finally:
        await store.close()


def run_size(n: int, latency: float, events: int, colds: int, setup: RelaySetup) -> dict[str, Any]:
    repos = bench_repos(n)
    cold: list[Sample] = []
    warm: list[Sample] = []
    with tempfile.TemporaryDirectory() as tmp, sandbox_process(n, latency) as sandbox:
        allowlist = Path(tmp) / "allowlist.yaml"
        allowlist.write_text("L2:\n" + "".join(f"  - {repo}\n" for repo in repos))
        for attempt in range(colds):
            if setup.redis_url is not None:
                redis.Redis.from_url(setup.redis_url).flushdb()
            settings = load_settings(
                dispatch_concurrency=setup.concurrency,
                redis_url=setup.redis_url,
                webhook_secret=SECRET,
                github_app_id=sandbox.app_id,
                github_app_private_key=sandbox.private_key_pem,
                github_api_url=sandbox.url,
                allowlist=str(allowlist),
                data_dir=Path(tmp) / f"data-{attempt}",
            )
            # Its garbage collector as `crcr serve` sets it: start-up heap frozen, fewer runs.
            app = create_app(settings, started=freeze_what_exists)
            tune_for_serving()
            with serve_in_thread(app) as relay_url:
                cold_run, warm_run = asyncio.run(
                    measure(
                        sandbox,
                        relay_url,
                        events if attempt == 0 else 0,
                        settings,
                        n,
                    )
                )
            cold.append(cold_run)
            warm.extend(warm_run)
    return {
        "n": n,
        "cold_p50": percentile([s.seconds for s in cold], 0.5),
        "cold_p99": percentile([s.seconds for s in cold], 0.99),
        "cold_calls_per_repo": statistics.mean(s.github_calls for s in cold) / n,
        "warm_p50": percentile([s.seconds for s in warm], 0.5),
        "warm_p99": percentile([s.seconds for s in warm], 0.99),
        "warm_calls_per_repo": statistics.mean(s.github_calls for s in warm) / n,
        "warm_cpu_ms_per_repo": statistics.mean(s.cpu_seconds for s in warm) * 1000 / n,
        "warm_process_cpu_ms_per_repo": (
            statistics.mean(s.process_cpu_seconds for s in warm) * 1000 / n
        ),
        "warm_sandbox_cpu_ms_per_repo": (
            statistics.mean(s.sandbox_cpu_seconds for s in warm) * 1000 / n
        ),
    }


async def measure(
    sandbox: SandboxChild,
    url: str,
    events: int,
    settings: Settings,
    n: int,
) -> tuple[Sample, list[Sample]]:
    calls = sandbox.calls
    async with httpx.AsyncClient(timeout=120) as client:
        before, _ = calls()
        cold = Sample(await post_event(client, url, 1), calls()[0] - before)
        if events:
            await levels_followed(settings, n)
        warm = []
        for number in range(events):
            before, sandbox_cpu = calls()
            cpu, own = time.process_time(), time.thread_time()
            seconds = await post_event(client, url, 100 + number)
            cpu = time.process_time() - cpu
            # The process's CPU but this (the posting) thread's: the relay's threads alone.
            relay_cpu = cpu - (time.thread_time() - own)
            after, sandbox_after = calls()
            sample = Sample(seconds, after - before, relay_cpu, cpu, sandbox_after - sandbox_cpu)
            warm.append(sample)
    return cold, warm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 300])
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--events", type=int, default=20, help="warm events per size")
    parser.add_argument("--colds", type=int, default=5, help="cold starts per size")
    parser.add_argument(
        "--concurrency", type=int, default=100, help="CRCR_DISPATCH_CONCURRENCY for the relay"
    )
    parser.add_argument("--state", choices=("sqlite", "redis"), default="sqlite")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/10")
    args = parser.parse_args()
    setup = RelaySetup(args.concurrency, args.redis_url if args.state == "redis" else None)
    print(
        f"sandbox latency {args.latency * 1000:.0f} ms per call; {args.state} state; "
        f"dispatch concurrency {args.concurrency}"
    )
    print(
        f"{'N':>5} {'cold p50':>9} {'cold p99':>9} {'calls/repo':>10} "
        f"{'warm p50':>9} {'warm p99':>9} {'calls/repo':>10} {'relay CPU/repo':>14} "
        f"{'process CPU/repo':>16} {'sandbox CPU/repo':>16}"
    )
    for n in args.sizes:
        r = run_size(n, args.latency, args.events, args.colds, setup)
        print(
            f"{r['n']:>5} {r['cold_p50'] * 1000:>7.0f}ms {r['cold_p99'] * 1000:>7.0f}ms "
            f"{r['cold_calls_per_repo']:>10.2f} {r['warm_p50'] * 1000:>7.0f}ms "
            f"{r['warm_p99'] * 1000:>7.0f}ms {r['warm_calls_per_repo']:>10.2f} "
            f"{r['warm_cpu_ms_per_repo']:>12.3f}ms "
            f"{r['warm_process_cpu_ms_per_repo']:>14.3f}ms "
            f"{r['warm_sandbox_cpu_ms_per_repo']:>14.3f}ms",
            flush=True,
        )


if __name__ == "__main__":
    main()

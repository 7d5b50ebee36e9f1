"""Callback throughput, latency and CPU per callback, with the load generator on the same cores.

Run: `python -m bench.callbacks [--concurrency 1 16 64] [--seconds 10] [--workers 1 2]
[--repeat 5]`.

The relay runs as `crcr serve` would (uvicorn, N worker processes, Redis state shared by
the workers, the in-process SQLite HUD in WAL) on loopback. This process serves the
sandbox OIDC issuer in a thread (its JWKS is fetched once per worker), writes the
dispatch records through the real store API, and mints the tokens before the clock
starts: minting is the downstream's cost. The load generator (`bench.callback_load`)
is a separate process sending realistic in_progress-then-completed callbacks (the
echoed pull_request payload is ~26 KB) for distinct jobs.

CPU is read from /proc: the relay's processes (uvicorn's supervisor and workers), the
generator's own `os.times`, Redis's `INFO cpu`, and the whole machine's /proc/stat, so
the share used by anything else on the machine shows too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import httpx
import redis
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.applications import Starlette
from starlette.routing import Mount

from bench.callback_load import UPSTREAM, bench_repos, delivery_event, delivery_id, run_id
from bench.serving import serve_in_thread
from crcr.relay.jobs.dispatch import DispatchRecord, DispatchStatus, UpstreamContext
from crcr.sandbox.oidc_issuer import SandboxIssuer
from crcr.stores.keys import DEFAULT_PREFIX
from crcr.stores.redis.state import RedisStateStore
from crcr.stores.sqlite.state import SqliteStateStore
from crcr.stores.state import StateStore

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/13"
AUDIENCE = "pytorch-cross-repo-ci-relay"
TICKS = os.sysconf("SC_CLK_TCK")
TOKEN_LIFETIME = 3 * 3600
PY_SPY = str(Path(sys.executable).with_name("py-spy"))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def app_key_pem() -> str:
    """A GitHub App key for settings validation; no GitHub call happens in this bench."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


def process_tree(root: int) -> list[int]:
    """`root` and its descendants (uvicorn's supervisor and its worker processes)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, pending = [], [root]
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending.extend(children.get(pid, []))
    return found


def cpu_seconds(pids: list[int]) -> float:
    return sum(cpu_by_process(pids).values())


def cpu_by_process(pids: list[int]) -> dict[int, float]:
    """CPU seconds (user and system) each of `pids` has used; a process gone counts 0."""
    used: dict[int, float] = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            fields = ["0"] * 13
        used[pid] = (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime
    return used


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine spent not idle (all cores)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / TICKS


def redis_cpu_seconds(client: redis.Redis) -> float:
    info: dict[str, Any] = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


@dataclass
class Relay:
    """A running relay and what the load generator needs to reach it."""

    process: subprocess.Popen[bytes]
    port: int
    tokens: dict[str, list[str]]

    def pids(self) -> list[int]:
        return process_tree(self.process.pid)


async def write_dispatch_records(
    redis_url: str | None,
    repos: list[str],
    deliveries: int,
    sqlite_path: Path | None = None,
    prefix: str = DEFAULT_PREFIX,
) -> None:
    """One record per (delivery, repo), as the webhook's fan-out writes them.

    In Redis at `redis_url`, or (`redis_url` None) in the SQLite state store at `sqlite_path`.
    """
    store: StateStore
    if redis_url is None:
        assert sqlite_path is not None
        sqlite_path.parent.mkdir(parents=True, exist_ok=True)
        store = await SqliteStateStore.open(sqlite_path)
    else:
        store = RedisStateStore.from_url(redis_url, prefix=prefix)
    try:
        for index in range(deliveries):
            event = delivery_event(index)
            context = UpstreamContext(
                UPSTREAM, "pull_request", event["pull_request"]["head"]["sha"], event["number"]
            )
            records = {
                repo: DispatchRecord(
                    delivery_id(index), repo, DispatchStatus.DISPATCHED, context, time.time()
                ).to_store()
                for repo in repos
            }
            await store.put_dispatches(delivery_id(index), records, 24 * 3600)
    finally:
        await store.close()


def wait_ready(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"relay exited with {process.returncode}")
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError("relay did not become ready")


@dataclass
class RelayWorld:
    """What a relay under test needs around it: settings, and the generator's tokens."""

    env: dict[str, str]
    tokens: dict[str, list[str]]


@contextmanager
def relay_world(args: argparse.Namespace) -> Iterator[RelayWorld]:
    """Issuer, allowlist, dispatch records and tokens, on a fresh Redis database."""
    repos = bench_repos(args.repos)
    sqlite = getattr(args, "state", "redis") == "sqlite"
    flush = redis.Redis.from_url(args.redis_url)
    if not sqlite:
        flush.flushdb()
    issuer = SandboxIssuer("http://127.0.0.1:0/oidc")  # the real URL is known once serving
    with (
        tempfile.TemporaryDirectory(prefix="crcr-bench-") as tmp,
        serve_in_thread(Starlette(routes=[Mount("/oidc", routes=issuer.routes())])) as issuer_base,
    ):
        issuer.issuer = f"{issuer_base}/oidc"
        allowlist = Path(tmp) / "allowlist.yaml"
        allowlist.write_text("L2:\n" + "".join(f"  - {repo}\n" for repo in repos))
        env = {k: v for k, v in os.environ.items() if not k.startswith("CRCR_")}
        env.update(
            CRCR_REDIS_URL=args.redis_url,
            CRCR_DATA_DIR=str(Path(tmp) / "data"),
            CRCR_ALLOWLIST=str(allowlist),
            CRCR_OIDC_ISSUERS=json.dumps([{"issuer": issuer.issuer, "kind": "github"}]),
            CRCR_OIDC_AUDIENCE=AUDIENCE,
            CRCR_WEBHOOK_SECRET="bench-secret",
            CRCR_GITHUB_APP_ID="1",
            CRCR_GITHUB_APP_PRIVATE_KEY=app_key_pem(),
            CRCR_GITHUB_API_URL="http://127.0.0.1:9",
            # Spread over --repos repositories; the default 100/min/repo would cap the run.
            CRCR_RATE_LIMIT_PER_MIN=str(args.rate_limit),
        )
        env.update(setting.split("=", 1) for setting in args.relay_env)  # e.g. CRCR_HUD_URL
        if sqlite:  # the embedded state store, in the relay's data directory
            del env["CRCR_REDIS_URL"]
        sqlite_path = Path(env["CRCR_DATA_DIR"]) / "state.db"
        redis_url = None if sqlite else args.redis_url
        asyncio.run(write_dispatch_records(redis_url, repos, args.deliveries, sqlite_path))
        expires = int(time.time()) + TOKEN_LIFETIME
        tokens = {
            repo: [
                issuer.mint_actions_token(repo, audience=AUDIENCE, exp=expires, run_id=run_id(k))
                for k in range(args.tokens_per_repo)
            ]
            for repo in repos
        }
        try:
            yield RelayWorld(env, tokens)
        finally:
            if not sqlite:
                flush.flushdb()
            flush.close()


@contextmanager
def running_relay(args: argparse.Namespace, workers: int) -> Iterator[Relay]:
    """`crcr serve` with `workers` workers in a fresh relay world."""
    with relay_world(args) as world:
        port = free_port()
        command = [sys.executable, "-m", "crcr", "serve", "--port", str(port)]
        command += ["--workers", str(workers), *args.serve_option]
        log_path = Path(world.env["CRCR_DATA_DIR"]).with_name("relay.log")
        with log_path.open("wb") as log:
            process = subprocess.Popen(command, env=world.env, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_ready(f"http://127.0.0.1:{port}", process)
            time.sleep(0.5 * workers)  # every worker up, not just the first
            yield Relay(process, port, world.tokens)
        finally:
            process.terminate()
            process.wait(timeout=30)
            tail = log_path.read_text(errors="replace").splitlines()[-20:]
            if any("Traceback" in line or "ERROR" in line for line in tail):
                print("relay log tail:\n" + "\n".join(tail), file=sys.stderr)


def py_spy(output: str, pid: int, seconds: float) -> subprocess.Popen[bytes]:
    """Sample `pid` while it holds the GIL (its Python CPU time) for `seconds`."""
    command = [PY_SPY, "record", "--pid", str(pid), "--duration", str(int(seconds))]
    command += ["--rate", "250", "--gil", "--nonblocking", "--format", "raw", "--output", output]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def percentile(ordered: list[float], fraction: float) -> float:
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def run_load(
    relay: Relay, args: argparse.Namespace, concurrency: int, seconds: float, first_job: int
) -> dict[str, Any]:
    """One generator run; returns its results plus the CPU each party used meanwhile."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as plan_file:
        json.dump(
            {
                "host": "127.0.0.1",
                "port": relay.port,
                "concurrency": concurrency,
                "seconds": seconds,
                "first_job": first_job,
                "repos": args.repos,
                "deliveries": args.deliveries,
                "tokens": relay.tokens,
                "rate": args.rate if seconds == args.seconds else None,
                "fresh_connections": args.fresh_connections,
            },
            plan_file,
        )
    result_path = Path(plan_file.name).with_suffix(".result.json")
    generator = subprocess.Popen(
        [sys.executable, "-m", "bench.callback_load", plan_file.name, str(result_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert generator.stdin is not None and generator.stdout is not None
    try:
        if generator.stdout.readline().strip() != "ready":
            raise RuntimeError("load generator failed to start")
        counters = redis.Redis.from_url(args.redis_url)
        pids = relay.pids()
        by_process = cpu_by_process(pids)
        before = (cpu_seconds(pids), redis_cpu_seconds(counters), machine_busy_seconds())
        generator.stdin.write("go\n")
        generator.stdin.flush()
        profiled = [
            pid
            for pid in (pids if args.py_spy and seconds == args.seconds else [])
            if pid != relay.process.pid or len(pids) == 1  # the workers, not the supervisor
        ]
        profilers = [
            py_spy(f"{args.py_spy}.w{len(pids)}.c{concurrency}.{pid}", pid, seconds)
            for pid in profiled
        ]
        if generator.stdout.readline().strip() != "done":
            raise RuntimeError("load generator failed before writing its results")
        result: dict[str, Any] = json.loads(result_path.read_text())
        for profiler in profilers:
            profiler.wait(timeout=60)
        after = (cpu_seconds(pids), redis_cpu_seconds(counters), machine_busy_seconds())
        workers = [pid for pid in pids if pid != relay.process.pid or len(pids) == 1]
        worker_cpu = [cpu_by_process(workers)[pid] - by_process[pid] for pid in workers]
        counters.close()
    finally:
        generator.wait(timeout=60)
        os.unlink(plan_file.name)
        result_path.unlink(missing_ok=True)
    result["relay_cpu"], result["redis_cpu"], result["machine_cpu"] = (
        a - b for a, b in zip(after, before, strict=True)
    )
    # How evenly the workers shared the load: kept-alive connections stay with the worker
    # that accepted them, so one worker may carry most of a run (see `callback_load`).
    result["busiest_worker_share"] = max(worker_cpu) / max(sum(worker_cpu), 1e-9)
    return result


def longest_stall(answered_at: list[float]) -> float:
    """The longest time in the run during which no answer arrived (seconds).

    At saturation answers should arrive steadily; long stalls are what make p99 a
    multiple of p50 (see docs/benchmarks.md, "Where the p99 comes from").
    """
    ordered = sorted(answered_at)
    return max((b - a for a, b in pairwise(ordered)), default=0.0)


def summarise(workers: int, concurrency: int, result: dict[str, Any]) -> dict[str, Any]:
    ordered = sorted(result["latencies"])
    requests = result["requests"]
    accepted = result["statuses"].get("200 accepted", 0)
    per = 1000 / max(1, requests)
    relay_ms = result["relay_cpu"] * per
    generator_ms = result["cpu_seconds"] * per
    redis_ms = result["redis_cpu"] * per
    other_ms = result["machine_cpu"] * per - relay_ms - generator_ms - redis_ms
    return {
        "workers": workers,
        "concurrency": concurrency,
        "rate": requests / result["elapsed"],
        "p50_ms": percentile(ordered, 0.50) * 1000,
        "p99_ms": percentile(ordered, 0.99) * 1000,
        "stall_ms": longest_stall(result["answered_at"]) * 1000,
        "relay_ms": relay_ms,
        "generator_ms": generator_ms,
        "redis_ms": redis_ms,
        "other_ms": other_ms,
        "busiest_worker_share": result["busiest_worker_share"],
        "accepted": accepted,
        "requests": requests,
        "statuses": result["statuses"],
        "failures": result["failures"],
    }


HEADER = (
    "| workers | concurrency | callbacks/s | p50 ms | p99 ms | relay CPU ms/cb "
    "| generator ms/cb | Redis ms/cb | rest of machine ms/cb | longest stall ms "
    "| busiest worker's CPU share |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|"
)


def row(s: dict[str, Any]) -> str:
    return (
        f"| {s['workers']} | {s['concurrency']} | {s['rate']:,.0f} | {s['p50_ms']:.1f} "
        f"| {s['p99_ms']:.1f} | {s['relay_ms']:.2f} | {s['generator_ms']:.2f} "
        f"| {s['redis_ms']:.2f} | {s['other_ms']:.2f} | {s['stall_ms']:.1f} "
        f"| {s['busiest_worker_share']:.0%} |"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--workers", type=int, nargs="+", default=[1])
    parser.add_argument("--repos", type=int, default=50, help="L2 repositories reporting")
    parser.add_argument("--deliveries", type=int, default=200, help="dispatched PR events")
    parser.add_argument("--tokens-per-repo", type=int, default=10)
    parser.add_argument("--rate-limit", type=int, default=1_000_000, help="per repo per minute")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds, not measured")
    parser.add_argument("--redis-url", default=DEFAULT_REDIS_URL, help="flushed before and after")
    parser.add_argument(
        "--state", choices=["redis", "sqlite"], default="redis", help="the relay's state store"
    )
    parser.add_argument(
        "--serve-option", action="append", default=[], help="extra `crcr serve` option"
    )
    parser.add_argument(
        "--relay-env", action="append", default=[], help="KEY=VALUE for the relay's environment"
    )
    parser.add_argument("--py-spy", help="profile each measured run's workers to PREFIX.*")
    parser.add_argument("--json", type=Path, help="also write the summaries here")
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs per setting, each on a fresh relay"
    )
    parser.add_argument(
        "--rate",
        type=float,
        help="offer this many callbacks/s (open loop, latency from when each was due); "
        "default: closed loop, every client sends again as soon as it is answered",
    )
    parser.add_argument(
        "--fresh-connections",
        action="store_true",
        help="a new TCP connection per callback, as `crcr report` makes (default: keep-alive)",
    )
    args = parser.parse_args(argv)

    summaries = []
    if args.fresh_connections:
        print("a new connection per callback")
    if args.rate:
        print(f"open loop: {args.rate:,.0f} callbacks/s offered")
    print(HEADER, flush=True)
    for workers in args.workers:
        for _ in range(args.repeat):
            with running_relay(args, workers) as relay:
                next_job = 0
                warm = run_load(relay, args, 8 * workers, args.warmup, next_job)
                next_job += warm["jobs"]
                for concurrency in args.concurrency:
                    result = run_load(relay, args, concurrency, args.seconds, next_job)
                    next_job += result["jobs"]
                    summary = summarise(workers, concurrency, result)
                    summaries.append(summary)
                    print(row(summary), flush=True)
                    if summary["accepted"] != summary["requests"]:
                        print(f"  not all accepted: {summary['statuses']} {summary['failures']}")
    if args.repeat > 1:
        print_medians(summaries, args.repeat)
    if args.json:
        args.json.write_text(json.dumps(summaries, indent=2))


def print_medians(summaries: list[dict[str, Any]], repeat: int) -> None:
    """The median run of each setting (by rate), with the range over all its runs.

    This VM's CPU speed drifts by ±15 % from minute to minute, so one run proves little.
    """
    print(f"\nmedian of {repeat} runs (range over the runs in brackets)")
    print("| workers | concurrency | callbacks/s | p50 ms | p99 ms | relay CPU ms/cb |")
    print("|---|---|---|---|---|---|")
    settings = sorted({(s["workers"], s["concurrency"]) for s in summaries})
    for workers, concurrency in settings:
        runs = sorted(
            (s for s in summaries if (s["workers"], s["concurrency"]) == (workers, concurrency)),
            key=lambda s: s["rate"],
        )
        median = runs[len(runs) // 2]
        rates = f"{runs[0]['rate']:,.0f}-{runs[-1]['rate']:,.0f}"
        p99s = sorted(s["p99_ms"] for s in runs)
        print(
            f"| {workers} | {concurrency} | {median['rate']:,.0f} ({rates}) "
            f"| {median['p50_ms']:.1f} | {median['p99_ms']:.1f} "
            f"({p99s[0]:.1f}-{p99s[-1]:.1f}) "
            f"| {median['relay_ms']:.2f} |"
        )


if __name__ == "__main__":
    main()

"""Soak: hundreds of thousands of callbacks through one relay on Redis and PostgreSQL, with the
relay's memory and open file descriptors sampled every 10 s (issue 17).

Run: `nice python -m bench.soak [--callbacks 500000] [--max-minutes 40] [--workers 1]`.

The relay runs as `crcr serve` (Redis state under a key prefix of its own, the in-process
HUD writing to a PostgreSQL schema of its own; both removed afterwards). The load comes
from `bench.callback_load` in rounds of `--round-seconds`, each continuing the workload
where the last stopped, so every callback is for a distinct job (in_progress, then
completed). A sampler reads RSS and open fds of every relay process from /proc every
10 s. The run ends at `--callbacks` callbacks or `--max-minutes`, whichever comes first.

Verdict: every callback answered `200 accepted`, the relay logged no ERROR, and RSS and
fds after warm-up (the first `--warmup-fraction` of the samples) grow by less than 10 %:
compared are the median of the first and of the last quarter of the samples after
warm-up, so a single garbage-collection peak does not decide.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis
from starlette.applications import Starlette
from starlette.routing import Mount
from tests.json_log import entries_at
from tests.postgres_schema import private_schema

from bench.callback_load import bench_repos, run_id
from bench.callbacks import (
    Relay,
    app_key_pem,
    free_port,
    run_load,
    wait_ready,
    write_dispatch_records,
)
from bench.serving import serve_in_thread
from crcr.sandbox.oidc_issuer import SandboxIssuer

AUDIENCE = "pytorch-cross-repo-ci-relay"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/13"
DEFAULT_POSTGRES_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
SAMPLE_EVERY = 10.0
GROWTH_LIMIT = 0.10


@dataclass
class Sample:
    """One reading of the relay's processes."""

    at: float  # seconds into the soak
    callbacks: int
    rss_mb: float
    fds: int
    rss_mb_each: list[float]  # per process, the supervisor first: which one grows


def read_usage(pids: list[int]) -> tuple[list[float], int]:
    """Resident memory (MB) of each of `pids`, and their open file descriptors summed."""
    rss_mb: list[float] = []
    fds = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    rss_mb.append(int(line.split()[1]) / 1024)
            fds += len(os.listdir(f"/proc/{pid}/fd"))
        except OSError:
            continue
    return rss_mb, fds


@dataclass
class Sampler:
    """Samples the relay every `SAMPLE_EVERY` seconds from a thread, until stopped."""

    relay: Relay
    started: float = field(default_factory=time.monotonic)
    callbacks: int = 0  # updated by the orchestrator after each round
    samples: list[Sample] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self._stop.wait(SAMPLE_EVERY):
            each, fds = read_usage(self.relay.pids())
            at = round(time.monotonic() - self.started, 1)
            sample = Sample(at, self.callbacks, sum(each), fds, [round(mb, 1) for mb in each])
            self.samples.append(sample)
            print(
                f"  {sample.at:7.0f} s {sample.callbacks:9,} callbacks "
                f"RSS {sample.rss_mb:7.1f} MB ({' + '.join(map(str, sample.rss_mb_each))}) "
                f"fds {sample.fds}",
                flush=True,
            )

    @contextmanager
    def running(self) -> Iterator[None]:
        thread = threading.Thread(target=self.run, daemon=True)
        thread.start()
        try:
            yield
        finally:
            self._stop.set()
            thread.join()


@contextmanager
def redis_prefix(url: str) -> Iterator[str]:
    """A key prefix of the soak's own, its keys deleted afterwards (never a FLUSHDB)."""
    prefix = f"crcr-soak-{uuid.uuid4().hex[:10]}:"
    try:
        yield prefix
    finally:
        with redis.Redis.from_url(url) as client:
            batch = []
            for key in client.scan_iter(match=f"{prefix}*", count=1000):
                batch.append(key)
                if len(batch) >= 1000:
                    client.delete(*batch)
                    batch.clear()
            if batch:
                client.delete(*batch)


@contextmanager
def soak_relay(args: argparse.Namespace, errors: Counter[str]) -> Iterator[Relay]:
    """`crcr serve` on Redis (own prefix) and PostgreSQL (own schema), tokens minted.

    The relay's ERROR log entries are counted into `errors` (by message) once it stopped.
    """
    repos = bench_repos(args.repos)
    issuer = SandboxIssuer("http://127.0.0.1:0/oidc")
    with (
        tempfile.TemporaryDirectory(prefix="crcr-soak-") as tmp,
        serve_in_thread(Starlette(routes=[Mount("/oidc", routes=issuer.routes())])) as base,
        redis_prefix(args.redis_url) as prefix,
        private_schema(args.postgres_url, "soak") as database_url,
    ):
        issuer.issuer = f"{base}/oidc"
        allowlist = Path(tmp) / "allowlist.yaml"
        allowlist.write_text("L2:\n" + "".join(f"  - {repo}\n" for repo in repos))
        env = {k: v for k, v in os.environ.items() if not k.startswith("CRCR_")}
        env.update(
            CRCR_REDIS_URL=args.redis_url,
            CRCR_REDIS_PREFIX=prefix,
            CRCR_DATABASE_URL=database_url,
            CRCR_DATA_DIR=str(Path(tmp) / "data"),
            CRCR_ALLOWLIST=str(allowlist),
            CRCR_OIDC_ISSUERS=json.dumps([{"issuer": issuer.issuer, "kind": "github"}]),
            CRCR_OIDC_AUDIENCE=AUDIENCE,
            CRCR_WEBHOOK_SECRET="soak-secret",
            CRCR_GITHUB_APP_ID="1",
            CRCR_GITHUB_APP_PRIVATE_KEY=app_key_pem(),
            CRCR_GITHUB_API_URL="http://127.0.0.1:9",
            CRCR_RATE_LIMIT_PER_MIN="1000000",
        )
        asyncio.run(write_dispatch_records(args.redis_url, repos, args.deliveries, prefix=prefix))
        expires = int(time.time()) + 6 * 3600
        tokens = {
            repo: [
                issuer.mint_actions_token(repo, audience=AUDIENCE, exp=expires, run_id=run_id(k))
                for k in range(args.tokens_per_repo)
            ]
            for repo in repos
        }
        port = free_port()
        command = [sys.executable, "-m", "crcr", "serve", "--port", str(port)]
        command += ["--workers", str(args.workers), "--no-access-log"]
        log_path = Path(tmp) / "relay.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_ready(f"http://127.0.0.1:{port}", process)
            yield Relay(process, port, tokens)
        finally:
            process.terminate()
            process.wait(timeout=60)
            logged = log_path.read_text(errors="replace")
            errors.update(str(e.get("message", ""))[:120] for e in entries_at(logged, "error"))
            for message, count in errors.items():
                print(f"relay log: {count} error lines: {message}", file=sys.stderr)


def growth(values: list[float]) -> float:
    """Median of the last quarter over the median of the first quarter, minus one."""
    quarter = max(1, len(values) // 4)
    first, last = statistics.median(values[:quarter]), statistics.median(values[-quarter:])
    return last / first - 1 if first else 0.0


def verdict(samples: list[Sample], warmup_fraction: float) -> dict[str, Any]:
    """Growth of RSS and fds after warm-up."""
    steady = samples[int(len(samples) * warmup_fraction) :]
    if len(steady) < 4:
        return {"rss_growth": None, "fd_growth": None}
    return {
        "rss_growth": growth([s.rss_mb for s in steady]),
        "fd_growth": growth([float(s.fds) for s in steady]),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--callbacks", type=int, default=500_000)
    parser.add_argument("--max-minutes", type=float, default=40.0)
    parser.add_argument("--round-seconds", type=float, default=30.0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--repos", type=int, default=50)
    parser.add_argument("--deliveries", type=int, default=200)
    parser.add_argument("--tokens-per-repo", type=int, default=10)
    parser.add_argument("--warmup-fraction", type=float, default=0.2)
    parser.add_argument("--redis-url", default=DEFAULT_REDIS_URL)
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    parser.add_argument("--json", type=Path, help="also write samples and totals here")
    args = parser.parse_args(argv)
    # What `bench.callbacks.run_load` reads besides the plan.
    args.seconds, args.rate, args.fresh_connections, args.py_spy = 0.0, None, False, None

    statuses: dict[str, int] = {}
    failures: list[str] = []
    errors: Counter[str] = Counter()
    with soak_relay(args, errors) as relay:
        sampler = Sampler(relay)
        deadline = time.monotonic() + args.max_minutes * 60
        next_job, callbacks = 0, 0
        with sampler.running():
            while callbacks < args.callbacks and time.monotonic() < deadline:
                left = (args.callbacks - callbacks) / max(1.0, callbacks / _elapsed(sampler))
                seconds = min(args.round_seconds, max(2.0, left + 1))
                result = run_load(relay, args, args.concurrency, seconds, next_job)
                next_job += result["jobs"]
                callbacks += result["requests"]
                sampler.callbacks = callbacks
                for status, count in result["statuses"].items():
                    statuses[status] = statuses.get(status, 0) + count
                failures.extend(result["failures"][: max(0, 5 - len(failures))])
        elapsed = _elapsed(sampler)
    summary = {
        "callbacks": callbacks,
        "seconds": round(elapsed, 1),
        "rate": callbacks / elapsed,
        "statuses": statuses,
        "failures": failures,
        "relay_error_lines": dict(errors),
        "workers": args.workers,
        **verdict(sampler.samples, args.warmup_fraction),
        "samples": [vars(s) for s in sampler.samples],
    }
    print(json.dumps({k: v for k, v in summary.items() if k != "samples"}, indent=2))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    ok = (
        statuses.keys() <= {"200 accepted"}
        and not errors
        and all(
            g is not None and g < GROWTH_LIMIT
            for g in (summary["rss_growth"], summary["fd_growth"])
        )
    )
    print("soak: " + ("flat, no error" if ok else "NOT flat or errors"))
    sys.exit(0 if ok else 1)


def _elapsed(sampler: Sampler) -> float:
    return max(1e-6, time.monotonic() - sampler.started)


if __name__ == "__main__":
    main()

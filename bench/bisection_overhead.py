"""What a bisection costs the relay itself: state-store operations and GitHub calls per step.

Run: `python -m bench.bisection_overhead [--sizes 7 50 200] [--redis-url URL]`.

The leader's finder runs for real — compare API over the in-process sandbox GitHub,
the fan-out's dispatch records, the bisection record's compare-and-set — on a real
SQLite file and (when reachable) a real Redis. Only the backend is a stand-in: it
"runs" each dispatched commit at once (failing from the culprit on) and the finder
reads its result from memory instead of the HUD, so the numbers are the relay's own
overhead per step, not a backend's run time. Every awaited store call is counted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import httpx

from crcr.github.client import GitHubClient
from crcr.hud.reads.culprits import JobResult
from crcr.relay.alerts.sinks import AlertSinks
from crcr.relay.allowlist.model import Allowlist
from crcr.relay.culprits.announce import Announcer, AnnounceStore
from crcr.relay.culprits.finder import CulpritFinder, FinderStore
from crcr.relay.webhook.fanout import FanOut
from crcr.sandbox.github_history import land_commit
from crcr.sandbox.github_server import create_sandbox_app
from crcr.sandbox.github_state import SandboxGitHub
from crcr.stores.redis.state import RedisStateStore
from crcr.stores.sqlite.state import SqliteStateStore
from crcr.stores.state import StateStore, StateStoreUnavailable

UPSTREAM, BACKEND = "bench/upstream", "bench/backend"
API = "http://github.sandbox"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/15"


class CountingStore:
    """The store, every awaited call counted by method name."""

    def __init__(self, store: StateStore) -> None:
        self._store = store
        self.calls: dict[str, int] = {}

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._store, name)
        if not callable(attribute):
            return attribute

        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] = self.calls.get(name, 0) + 1
            return await attribute(*args, **kwargs)

        return counted

    @property
    def total(self) -> int:
        return sum(self.calls.values())


@dataclass
class InstantBackend:
    """Runs each dispatched commit at once; fails from the culprit on."""

    order: list[str]
    culprit: str
    runs: dict[str, str] = field(default_factory=dict)  # delivery id → head SHA

    async def send(self, repo: str, body: bytes) -> None:
        payload = json.loads(body)["client_payload"]
        self.runs[payload["delivery_id"]] = payload["payload"]["after"]

    def conclusion(self, sha: str) -> str:
        return "failure" if self.order.index(sha) >= self.order.index(self.culprit) else "success"

    async def push_results(self, repo: str, limit: int) -> list[JobResult]:
        return []  # main never recovers during the bench

    async def dispatch_jobs(self, repo: str, delivery_ids: Sequence[str]) -> list[JobResult]:
        now = datetime.now(UTC)
        return [
            JobResult(
                d, self.runs[d], "ci\x00test", "completed", self.conclusion(self.runs[d]), now
            )
            for d in delivery_ids
            if d in self.runs
        ]


@dataclass
class Run:
    commits: int
    steps: int
    passes: int
    store_ops: int
    store_ops_per_pass: float
    github_calls: int
    pass_ms_median: float
    by_method: dict[str, int]


async def bisect_once(store: StateStore, commits: int) -> Run:
    sandbox = SandboxGitHub()
    sandbox.install_app(UPSTREAM, BACKEND)
    good = land_commit(sandbox, UPSTREAM, "Base")
    shas = [land_commit(sandbox, UPSTREAM, f"Change {n}", pr_number=n) for n in range(commits)]
    backend = InstantBackend(shas, shas[(2 * commits) // 3])
    counted = CountingStore(store)
    github = GitHubClient(
        API,
        sandbox.app.app_id,
        sandbox.app.private_key_pem,
        store,
        transport=httpx.ASGITransport(app=create_sandbox_app(sandbox)),
    )
    fanout = FanOut(
        store=cast(Any, counted),
        send=backend.send,
        is_permanent=lambda exc: False,
        record_ttl=3600,
        concurrency=4,
    )

    async def allowlist() -> Allowlist:
        return Allowlist()

    async def failing() -> list[str]:
        return []

    announcer = Announcer(
        cast(AnnounceStore, counted), AlertSinks(None, None, None), github, allowlist,
        UPSTREAM, None, comment=False, keep_days=1, keep_entries=100,
    )  # fmt: skip
    finder = CulpritFinder(
        store=cast(FinderStore, counted),
        results=backend,
        fanout=fanout,
        github=github,
        announcer=announcer,
        failing=failing,
        upstream_repo=UPSTREAM,
        parallel=1,
        instance="bench",
    )
    await github.get_repo(UPSTREAM)  # the App's token, cached as in a running relay
    sandbox.call_log.clear()
    started = await finder.start(BACKEND, good, shas[-1], origin="bench")
    timings: list[float] = []
    passes, bisection = 0, started
    while bisection.running:
        began = time.perf_counter()
        [bisection] = [b for b in await finder.run_pass() if b.repo == BACKEND]
        timings.append((time.perf_counter() - began) * 1000)
        passes += 1
    await github.aclose()
    return Run(
        commits=commits,
        steps=len(bisection.steps),
        passes=passes + 1,
        store_ops=counted.total,
        store_ops_per_pass=round(counted.total / (passes + 1), 1),
        github_calls=len(sandbox.calls()),
        pass_ms_median=round(statistics.median(timings), 2),
        by_method=dict(sorted(counted.calls.items())),
    )


async def on_each_store(sizes: list[int], redis_url: str) -> dict[str, list[Run] | str]:
    found: dict[str, list[Run] | str] = {}
    with tempfile.TemporaryDirectory() as folder:
        runs = []
        for n in sizes:
            store = await SqliteStateStore.open(Path(folder) / f"state-{n}.db")
            runs.append(await bisect_once(store, n))
            await store.close()
        found["sqlite"] = runs
    redis_runs: list[Run] = []
    for n in sizes:
        redis_store = RedisStateStore.from_url(
            redis_url, prefix=f"crcr:bench-{uuid.uuid4().hex[:8]}:"
        )
        try:
            await redis_store.ping()
            redis_runs.append(await bisect_once(redis_store, n))
        except StateStoreUnavailable as exc:
            found["redis"] = f"skipped ({exc})"
            break
        finally:
            await redis_store.close()
    else:
        found["redis"] = redis_runs
    return found


def report(found: dict[str, list[Run] | str], out: Callable[[str], None] = print) -> None:
    out("store   commits  steps  passes  store ops  ops/pass  GitHub calls  pass ms (median)")
    for name, runs in found.items():
        if isinstance(runs, str):
            out(f"{name:7} {runs}")
            continue
        for r in runs:
            out(
                f"{name:7} {r.commits:7}  {r.steps:5}  {r.passes:6}  {r.store_ops:9}  "
                f"{r.store_ops_per_pass:8}  {r.github_calls:12}  {r.pass_ms_median:16}"
            )
    first = next((runs for runs in found.values() if not isinstance(runs, str)), None)
    if first:
        out(f"store calls of the largest run, by method: {first[-1].by_method}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[7, 50, 200])
    parser.add_argument("--redis-url", default=DEFAULT_REDIS_URL)
    args = parser.parse_args()
    report(asyncio.run(on_each_store(args.sizes, args.redis_url)))


if __name__ == "__main__":
    main()

"""`GET /api/crcr/metrics` under load: one read, 40 at once, and `/freshness` meanwhile.

Run: `python -m bench.hud_metrics --db sqlite:///PATH [--rows 300000]`. The store is
bulk-loaded (`bench.hud_store.bulk_load`) only when the file does not exist yet, so
before/after runs read the same data. Each figure is the real app's answer through
in-process ASGI: the latency of one `?days=90` read (median of `--samples`), the wall
time of `--concurrent` such reads sent at once, and the latency of one `/freshness`
sent while they are in flight (what a live page's poll waits). Issue 33 item 17.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

import httpx
from fastapi import FastAPI
from pydantic import SecretStr
from sqlalchemy import Engine

from bench.hud_store import bulk_load
from crcr.hud.component import Hud, mount_hud
from crcr.hud.db import create_results_engine, migrate
from crcr.hud.queries import HudQueries
from crcr.hud.write.ingest import HudIngestor


@asynccontextmanager
async def client_of(engine: Engine) -> AsyncIterator[httpx.AsyncClient]:
    """A client of a freshly built HUD app (nothing kept from an earlier one)."""
    app = FastAPI()
    app.state.hud = Hud(engine, HudIngestor(engine), HudQueries(engine), SecretStr("x"), 90)
    mount_hud(app)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://hud") as http:
        yield http


async def timed_metrics(http: httpx.AsyncClient) -> float:
    """Milliseconds `GET /api/crcr/metrics?days=90` took."""
    started = time.perf_counter()
    response = await http.get("/api/crcr/metrics", params={"days": 90})
    response.raise_for_status()
    return (time.perf_counter() - started) * 1000


async def one_read(engine: Engine) -> float:
    async with client_of(engine) as http:
        return await timed_metrics(http)


async def measure(args: argparse.Namespace, fresh: bool) -> None:
    engine = create_results_engine(args.db)
    try:
        if fresh:
            migrate(engine)
            seconds = bulk_load(engine, args.rows, args.backends, args.days, datetime.now(UTC))
            print(f"bulk load: {args.rows:,} rows in {seconds:.1f} s")
        cold = await one_read(engine)
        print(f"one metrics?days=90 on a fresh app (cold): {cold:.1f} ms")
        async with client_of(engine) as http:
            warm = [await timed_metrics(http) for _ in range(args.samples)]
        print(f"one metrics?days=90 again and again: median {statistics.median(warm):.1f} ms")
        async with client_of(engine) as http:
            started = time.perf_counter()
            crowd = [asyncio.create_task(timed_metrics(http)) for _ in range(args.concurrent)]
            await asyncio.sleep(0)
            poll_started = time.perf_counter()
            (await http.get("/api/crcr/freshness")).raise_for_status()
            poll_ms = (time.perf_counter() - poll_started) * 1000
            await asyncio.gather(*crowd)
            wall_ms = (time.perf_counter() - started) * 1000
        print(
            f"{args.concurrent} concurrent on a fresh app: {wall_ms:.0f} ms wall; "
            f"freshness meanwhile {poll_ms:.1f} ms"
        )
    finally:
        engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="sqlite:///./crcr-bench/hud-metrics.db")
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--backends", type=int, default=12)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--concurrent", type=int, default=40)
    args = parser.parse_args()
    asyncio.run(measure(args, fresh=not Path(args.db.removeprefix("sqlite:///")).exists()))


if __name__ == "__main__":
    main()

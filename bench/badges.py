"""The badge (SPEC §13): what one `GET /badge/<owner>/<repo>.svg` costs, and its 304.

Run: `python -m bench.badges [--jobs 200000] [--samples 200]`. A SQLite results store
gets `--jobs` completed jobs spread over 50 backends (half of them `push`), the state
store is SQLite too, and the badge route is the real one in front of the relay's health
assembler, through in-process ASGI. Printed: the median and p95 latency of a badge drawn
afresh, of a revalidation answered 304, and of `?event=nightly` (a judged event with no
rows), plus the SVG's size. A README badge is fetched on every view of the README, through
GitHub's image proxy, so it should stay a few milliseconds whatever the store's size.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from fastapi import FastAPI
from sqlalchemy import Engine, insert

from crcr.config.settings import load_settings
from crcr.hud.db import create_results_engine, migrate
from crcr.hud.models import BACKENDS, JOBS
from crcr.relay.allowlist.model import Allowlist, parse_allowlist
from crcr.relay.health.assemble import HealthAssembler
from crcr.relay.health.badge import badge_router
from crcr.stores.factory import open_state_store

REPOS = [f"org{n}/backend{n}" for n in range(50)]


def load(engine: Engine, jobs: int) -> None:
    """`jobs` completed jobs over the backends, newest last; half on the default branch."""
    now = datetime.now(UTC)
    rows = []
    for n in range(jobs):
        repo = REPOS[n % len(REPOS)]
        at = now - timedelta(seconds=jobs - n)
        rows.append(
            {
                "job_key": f"k{n}",
                "downstream_repo": repo,
                "downstream_repo_level": "L3",
                "upstream_repo": "pytorch/pytorch",
                "event_type": "push" if n % 2 else "pull_request",
                "delivery_id": f"d{n // 100}",
                "workflow_name": "ci",
                "job_name": f"test{n % 7}",
                "run_id": str(n),
                "status": "completed",
                "conclusion": "failure" if n % 11 == 0 else "success",
                "completed_at": at,
                "received_at": at,
                "updated_at": at,
                "activity_at": at,
                "day": at.date(),
            }
        )
    with engine.begin() as connection:
        for start in range(0, len(rows), 5000):
            connection.execute(insert(JOBS), rows[start : start + 5000])
        connection.execute(
            insert(BACKENDS),
            [{"repo": r, "level": "L3", "first_seen_at": now, "last_run_at": now} for r in REPOS],
        )


async def timed(call: Callable[[], Awaitable[httpx.Response]], samples: int) -> list[float]:
    took = []
    for _ in range(samples):
        started = time.perf_counter()
        response = await call()
        assert response.status_code in (200, 304), response.text
        took.append((time.perf_counter() - started) * 1000)
    return took


def show(name: str, took: list[float]) -> None:
    p95 = statistics.quantiles(took, n=20)[-1]
    print(f"{name:<34} median {statistics.median(took):6.2f} ms   p95 {p95:6.2f} ms")


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        engine = create_results_engine(f"sqlite:///{directory / 'hud.db'}")
        migrate(engine)
        load(engine, args.jobs)
        settings = load_settings(data_dir=directory, redis_url=None)
        store = await open_state_store(settings)
        listed = parse_allowlist("L3:\n  xpu:\n" + "".join(f"    {r}: [a]\n" for r in REPOS))

        async def allowlist() -> Allowlist:
            return listed

        health = HealthAssembler(store, engine, settings, allowlist)
        app = FastAPI()
        app.include_router(badge_router(lambda: health, allowlist))
        transport = httpx.ASGITransport(app=app)
        try:
            async with httpx.AsyncClient(transport=transport, base_url="http://relay") as http:
                path = f"/badge/{REPOS[7]}.svg"
                first = await http.get(path)
                etag = first.headers["etag"]
                print(
                    f"{args.jobs} jobs over {len(REPOS)} backends; SVG {len(first.content)} bytes"
                )
                show("badge drawn afresh", await timed(lambda: http.get(path), args.samples))
                revalidate = {"If-None-Match": etag}
                show(
                    "revalidated (304)",
                    await timed(lambda: http.get(path, headers=revalidate), args.samples),
                )
                nightly = {"event": "nightly"}
                show(
                    "?event=nightly (no rows)",
                    await timed(lambda: http.get(path, params=nightly), args.samples),
                )
        finally:
            await store.close()
            engine.dispose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=200_000)
    parser.add_argument("--samples", type=int, default=200)
    asyncio.run(main(parser.parse_args()))

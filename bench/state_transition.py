"""How long one `transition_job` (the callback path's compare-and-set) takes per backend.

Run: `python -m bench.state_transition [--iterations N] [--redis-url URL]`. Each iteration
is one awaited call from one client, so the numbers are latency, not throughput: Redis
pays a loopback round trip, SQLite a `BEGIN IMMEDIATE` transaction on a thread.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from crcr.stores.redis.state import RedisStateStore
from crcr.stores.sqlite.state import SqliteStateStore
from crcr.stores.state import JobRecord, StateStore, StateStoreUnavailable

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/15"
WARMUP = 200


async def _time_transitions(store: StateStore, iterations: int) -> list[float]:
    """Microseconds per call; each job goes DISPATCHED → IN_PROGRESS (one applied CAS)."""
    new = JobRecord("IN_PROGRESS", {"started_at": time.time()})
    samples = []
    for index in range(WARMUP + iterations):
        key = f"bench-job-{index}"
        started = time.perf_counter()
        await store.transition_job(key, allowed_from=[None, "DISPATCHED"], new=new, ttl=600)
        if index >= WARMUP:
            samples.append((time.perf_counter() - started) * 1e6)
    return samples


def _summary(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * len(ordered)) - 1)]
    return statistics.median(ordered), p99


async def _bench_redis(url: str, iterations: int) -> tuple[float, float] | str:
    prefix = f"crcr:bench-{uuid.uuid4().hex[:8]}:"
    store = RedisStateStore.from_url(url, prefix=prefix)
    try:
        await store.ping()
        return _summary(await _time_transitions(store, iterations))
    except StateStoreUnavailable as exc:
        return f"skipped ({exc})"
    finally:
        await store.close()
        await _delete_namespace(url, prefix)


async def _delete_namespace(url: str, prefix: str) -> None:
    import redis.asyncio as redis

    client = redis.from_url(url)
    try:
        keys = [key async for key in client.scan_iter(match=f"{prefix}*", count=1000)]
        for start in range(0, len(keys), 1000):
            await client.delete(*keys[start : start + 1000])
    except OSError:
        pass
    finally:
        await client.aclose()


async def _bench_sqlite(iterations: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as directory:
        store = await SqliteStateStore.open(Path(directory) / "state.db")
        try:
            return _summary(await _time_transitions(store, iterations))
        finally:
            await store.close()


async def main(iterations: int, redis_url: str) -> None:
    results = {
        "Redis (loopback, Lua)": await _bench_redis(redis_url, iterations),
        "SQLite (WAL, temp file)": await _bench_sqlite(iterations),
    }
    print(f"transition_job latency, {iterations} calls each (after {WARMUP} warm-up)")
    print(f"{'backend':<26}{'median µs':>12}{'p99 µs':>12}")
    for backend, result in results.items():
        if isinstance(result, str):
            print(f"{backend:<26}{result}")
        else:
            median, p99 = result
            print(f"{backend:<26}{median:>12.0f}{p99:>12.0f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--iterations", type=int, default=5000)
    parser.add_argument("--redis-url", default=DEFAULT_REDIS_URL)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.iterations, arguments.redis_url))

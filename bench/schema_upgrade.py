"""How long the Redis state store's schema upgrade 1 → 2 takes per job record.

Run: `python -m bench.schema_upgrade [--jobs N] [--redis-url URL] [--cluster]`. It writes
N job records (half of them with a deadline) in the version 1 layout under a prefix of
its own, times `upgrade_schema`, checks a sample of the records, and deletes the prefix.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid

import redis.asyncio as redis

from crcr.stores.keys import key_part
from crcr.stores.redis.state import RedisStateStore

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/15"


async def run(url: str, jobs: int, cluster: bool) -> None:
    prefix = f"crcr:bench-{uuid.uuid4().hex[:8]}:"
    admin = (
        redis.RedisCluster.from_url(url, decode_responses=True)
        if cluster
        else redis.Redis.from_url(url, decode_responses=True)
    )
    store = RedisStateStore.from_url(url, prefix=prefix, cluster=cluster)
    try:
        for start in range(0, jobs, 1000):
            async with admin.pipeline(transaction=False) as pipe:
                for n in range(start, min(start + 1000, jobs)):
                    key = f"{prefix}{{job:{key_part(f'd{n}:org/r:{n}:1:build')}}}"
                    pipe.hset(key, mapping={"state": "in_progress", "d:in_progress_at": "1.5"})
                    pipe.pexpire(key, 3_600_000)
                    if n % 2 == 0:
                        pipe.zadd(f"{prefix}{{deadlines}}", {f"d{n}:org/r:{n}:1:build": n})
                await pipe.execute()
        started = time.perf_counter()
        found = await store.upgrade_schema()
        elapsed = time.perf_counter() - started
        assert found == 1
        assert await store.get_job(f"d{jobs - 1}:org/r:{jobs - 1}:1:build") is not None
        print(
            f"{jobs} job records upgraded in {elapsed:.2f} s"
            f" ({elapsed / jobs * 1e6:.0f} µs per record){' on a Cluster' if cluster else ''}"
        )
    finally:
        await store.close()
        async for key in admin.scan_iter(match=f"{prefix}*", count=1000):
            await admin.delete(key)
        await admin.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--redis-url", default=DEFAULT_REDIS_URL)
    parser.add_argument("--cluster", action="store_true")
    args = parser.parse_args()
    asyncio.run(run(args.redis_url, args.jobs, args.cluster))


if __name__ == "__main__":
    main()

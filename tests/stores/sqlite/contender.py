"""One worker process of the multi-process SQLite test: contend, then print the outcome.

Run as `python contender.py STATE_DB`; it prints `ready`, waits for a line on
stdin (the start signal shared by all workers), then prints one JSON line of results.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from crcr.stores.sqlite.state import SqliteStateStore
from crcr.stores.state import JobRecord

CALLS = 25
RATE_LIMIT = 30


async def contend(path: Path) -> dict[str, object]:
    store = await SqliteStateStore.open(path)
    try:
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        new = JobRecord("DISPATCHED")
        transitions = await asyncio.gather(
            *(
                store.transition_job("job", allowed_from=[None], new=new, ttl=60)
                for _ in range(CALLS)
            )
        )
        hits = await asyncio.gather(
            *(store.hit_rate_limit("org/repo", RATE_LIMIT, 60) for _ in range(CALLS))
        )
        leased: list[str] = []
        while batch := await store.lease("hud", lease_seconds=60, limit=2):
            leased += [item.item_id for item in batch]
    finally:
        await store.close()
    return {
        "applied": sum(result.applied for result in transitions),
        "allowed": sum(hit.allowed for hit in hits),
        "leased": leased,
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(contend(Path(sys.argv[1])))), flush=True)

"""The allowlist stamp and the audit trail of the StateStore contract (SPEC §12), on both stores."""

from __future__ import annotations

import asyncio
import time

from crcr.stores.state import StateStore

DAY = 24 * 3600.0


def entry(bucket: str, at: float, **fields: object) -> dict[str, object]:
    return {"bucket": bucket, "at": at, "decision": "accepted", **fields}


async def test_the_allowlist_stamp_starts_at_zero_and_moves_by_one(store: StateStore) -> None:
    assert await store.allowlist_stamp() == 0
    assert await store.move_allowlist_stamp() == 1
    assert await store.move_allowlist_stamp() == 2
    assert await store.allowlist_stamp() == 2


async def test_concurrent_moves_of_the_stamp_are_all_counted(store: StateStore) -> None:
    moved = await asyncio.gather(*(store.move_allowlist_stamp() for _ in range(10)))
    assert sorted(moved) == list(range(1, 11))
    assert await store.allowlist_stamp() == 10


async def test_audit_entries_come_back_newest_first_per_bucket(store: StateStore) -> None:
    now = time.time()
    await store.append_audit(
        [entry("Org/A", now - 2, n=1), entry("org/b", now - 1, n=2), entry("org/a", now, n=3)],
        keep_seconds=DAY,
        keep_per_repo=100,
    )
    found = await store.audit_entries("ORG/a")
    assert [e["n"] for e in found] == [3, 1]
    assert {e["bucket"] for e in found} == {"org/a"}
    assert found[0] == entry("org/a", now, n=3)
    assert [e["n"] for e in await store.audit_entries()] == [3, 2, 1]
    assert await store.audit_entries("org/none") == []


async def test_identical_entries_are_all_kept(store: StateStore) -> None:
    now = time.time()
    await store.append_audit([entry("o/r", now)] * 3, keep_seconds=DAY, keep_per_repo=10)
    assert len(await store.audit_entries("o/r")) == 3


async def test_audit_entries_are_filtered_by_time_and_limited(store: StateStore) -> None:
    now = time.time()
    await store.append_audit(
        [entry("o/r", now - 100 + i, n=i) for i in range(10)], keep_seconds=DAY, keep_per_repo=100
    )
    assert [e["n"] for e in await store.audit_entries("o/r", since=now - 93)] == [9, 8, 7]
    assert [e["n"] for e in await store.audit_entries("o/r", limit=2)] == [9, 8]
    assert [e["n"] for e in await store.audit_entries(None, limit=4)] == [9, 8, 7, 6]


async def test_each_bucket_keeps_only_its_newest_entries(store: StateStore) -> None:
    now = time.time()
    await store.append_audit(
        [entry("o/busy", now - 10 + i, n=i) for i in range(6)], keep_seconds=DAY, keep_per_repo=4
    )
    await store.append_audit([entry("o/quiet", now, n=99)], keep_seconds=DAY, keep_per_repo=4)
    await store.append_audit([entry("o/busy", now, n=6)], keep_seconds=DAY, keep_per_repo=4)
    assert [e["n"] for e in await store.audit_entries("o/busy")] == [6, 5, 4, 3]
    assert [e["n"] for e in await store.audit_entries("o/quiet")] == [99]


async def test_entries_older_than_the_age_bound_are_dropped(store: StateStore) -> None:
    now = time.time()
    await store.append_audit(
        [entry("o/r", now - 5 * DAY, n=1), entry("o/r", now - DAY, n=2)],
        keep_seconds=30 * DAY,
        keep_per_repo=100,
    )
    await store.append_audit([entry("o/r", now, n=3)], keep_seconds=2 * DAY, keep_per_repo=100)
    assert [e["n"] for e in await store.audit_entries("o/r")] == [3, 2]


async def test_appending_nothing_is_allowed(store: StateStore) -> None:
    await store.append_audit([], keep_seconds=DAY, keep_per_repo=1)
    assert await store.audit_entries() == []


async def test_the_count_bound_holds_within_one_percent_over_many_appends(
    store: StateStore,
) -> None:
    now = time.time()
    for i in range(260):
        await store.append_audit(
            [entry("o/r", now - 300 + i, n=i)], keep_seconds=DAY, keep_per_repo=200
        )
    kept = await store.audit_entries("o/r", limit=1000)
    assert 200 <= len(kept) <= 202
    assert kept[0]["n"] == 259 and kept[199]["n"] == 60

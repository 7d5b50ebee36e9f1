"""The bisection role's contract, on Redis, Redis Cluster and SQLite."""

from __future__ import annotations

import asyncio

from crcr.stores.roles import Bisections

KEY = "org/xpu:aaa...bbb"


async def test_a_bisection_is_created_once_so_two_instances_never_run_it_twice(
    store: Bisections,
) -> None:
    first = {"repo": "org/xpu", "version": 0, "steps": []}
    assert await store.create_bisection(KEY, first) is True
    assert await store.create_bisection(KEY, {**first, "repo": "other"}) is False
    assert await store.bisections() == {KEY: first}


async def test_a_replace_applies_only_over_the_version_it_read(store: Bisections) -> None:
    await store.create_bisection(KEY, {"version": 0, "steps": []})
    step = {"version": 1, "steps": [{"sha": "c3", "conclusion": None}]}
    assert await store.replace_bisection(KEY, step, version=0) is True
    stale = {"version": 1, "steps": [{"sha": "c5", "conclusion": None}]}
    assert await store.replace_bisection(KEY, stale, version=0) is False
    assert await store.bisections() == {KEY: step}
    assert await store.replace_bisection("org/none:a...b", step, version=0) is False


async def test_of_concurrent_replaces_over_one_version_exactly_one_applies(
    store: Bisections,
) -> None:
    await store.create_bisection(KEY, {"version": 7})
    applied = await asyncio.gather(
        *(store.replace_bisection(KEY, {"version": 8, "by": n}, version=7) for n in range(8))
    )
    assert applied.count(True) == 1
    [record] = (await store.bisections()).values()
    assert record["by"] == applied.index(True)


async def test_a_removed_bisection_is_gone(store: Bisections) -> None:
    await store.create_bisection(KEY, {"version": 0})
    assert await store.remove_bisection(KEY) is True
    assert await store.remove_bisection(KEY) is False
    assert await store.bisections() == {}

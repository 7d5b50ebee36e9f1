"""The leader-lock role's contract, on Redis and on SQLite."""

from __future__ import annotations

import asyncio

from tests.waiting import eventually

from crcr.stores.roles import LeaderLock

# --- leader lock ------------------------------------------------------------------


async def test_lock_is_held_by_one_owner_and_renewed_by_it(store: LeaderLock) -> None:
    assert await store.acquire_lock("sweeper", "instance-a", 30) is True
    assert await store.acquire_lock("sweeper", "instance-b", 30) is False
    assert await store.acquire_lock("sweeper", "instance-a", 30) is True
    await store.release_lock("sweeper", "instance-b")
    assert await store.acquire_lock("sweeper", "instance-b", 30) is False
    await store.release_lock("sweeper", "instance-a")
    assert await store.acquire_lock("sweeper", "instance-b", 30) is True
    assert await store.acquire_lock("other-lock", "instance-a", 30) is True


async def test_an_expired_lock_can_be_taken_over(store: LeaderLock) -> None:
    assert await store.acquire_lock("sweeper", "instance-a", 0.3) is True
    assert await store.acquire_lock("sweeper", "instance-b", 30) is False

    async def taken_over() -> bool:
        return await store.acquire_lock("sweeper", "instance-b", 30)

    assert await eventually(taken_over) >= 0.2
    assert await store.acquire_lock("sweeper", "instance-a", 30) is False


async def test_only_one_of_many_concurrent_contenders_gets_the_lock(store: LeaderLock) -> None:
    won = await asyncio.gather(
        *(store.acquire_lock("sweeper", f"instance-{i}", 30) for i in range(50))
    )
    assert sum(won) == 1

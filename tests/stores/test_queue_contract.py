"""The retry-queue role's contract, on Redis and on SQLite."""

from __future__ import annotations

import asyncio
import time

from tests.waiting import eventually

from crcr.stores.roles import RetryQueue
from crcr.stores.state import LeasedItem, QueueStats

# --- durable retry queues with leases -------------------------------------------


async def test_enqueue_is_idempotent_per_item(store: RetryQueue) -> None:
    assert await store.enqueue("hud", "item-1", {"body": 1}) is True
    assert await store.enqueue("hud", "item-1", {"body": 2}) is False
    leased = await store.lease("hud", lease_seconds=30)
    assert [(item.item_id, item.payload, item.attempts) for item in leased] == [
        ("item-1", {"body": 1}, 0)
    ]
    assert abs(leased[0].enqueued_at - time.time()) < 5


async def test_a_leased_item_is_not_handed_to_another_worker(store: RetryQueue) -> None:
    await store.enqueue("hud", "item-1", {"body": 1})
    first = await store.lease("hud", lease_seconds=30)
    assert [item.item_id for item in first] == ["item-1"]
    assert await store.lease("hud", lease_seconds=30) == []
    assert (await store.queue_stats("hud")).depth == 1


async def test_concurrent_workers_each_get_distinct_items(store: RetryQueue) -> None:
    for index in range(20):
        await store.enqueue("hud", f"item-{index}", {"i": index})
    batches = await asyncio.gather(
        *(store.lease("hud", lease_seconds=30, limit=3) for _ in range(12))
    )
    handed_out = [item.item_id for batch in batches for item in batch]
    assert sorted(handed_out) == sorted(f"item-{index}" for index in range(20))


async def test_an_expired_lease_hands_the_item_out_again(store: RetryQueue) -> None:
    await store.enqueue("hud", "item-1", {"body": 1})
    (lost,) = await store.lease("hud", lease_seconds=0.3)
    assert await store.lease("hud", lease_seconds=30) == []
    retaken = []

    async def leased_again() -> bool:
        retaken.extend(await store.lease("hud", lease_seconds=30))
        return bool(retaken)

    assert await eventually(leased_again) >= 0.2
    (item,) = retaken
    assert (item.item_id, item.attempts, item.enqueued_at) == ("item-1", 0, lost.enqueued_at)
    assert item.lease_token != lost.lease_token
    assert await store.ack("hud", "item-1", lost.lease_token) is False
    assert await store.release("hud", "item-1", lost.lease_token, delay=0) is False
    assert await store.ack("hud", "item-1", item.lease_token) is True


async def test_a_renewed_lease_outlives_its_first_term_and_only_its_holder_renews(
    store: RetryQueue,
) -> None:
    await store.enqueue("hud", "item-1", {"body": 1})
    (item,) = await store.lease("hud", lease_seconds=0.5)
    assert await store.extend_lease("hud", "item-1", "not-the-token", lease_seconds=30) is False
    assert await store.extend_lease("hud", "item-1", item.lease_token, lease_seconds=30) is True
    await asyncio.sleep(0.7)  # past the first term: the item must still be held
    assert await store.lease("hud", lease_seconds=30) == []
    assert await store.ack("hud", "item-1", item.lease_token) is True
    assert await store.extend_lease("hud", "item-1", item.lease_token, lease_seconds=30) is False


async def test_a_lease_renewed_short_ends_soon(store: RetryQueue) -> None:
    await store.enqueue("hud", "item-1", {"body": 1})
    (item,) = await store.lease("hud", lease_seconds=300)
    assert await store.extend_lease("hud", "item-1", item.lease_token, lease_seconds=0.2)
    retaken: list[LeasedItem] = []

    async def leased_again() -> bool:
        retaken.extend(await store.lease("hud", lease_seconds=30))
        return bool(retaken)

    await eventually(leased_again)  # a holder that stops renewing loses the item soon
    assert retaken[0].item_id == "item-1"


async def test_ack_removes_the_item_for_good(store: RetryQueue) -> None:
    await store.enqueue("hud", "item-1", {"body": 1})
    (item,) = await store.lease("hud", lease_seconds=30)
    assert await store.ack("hud", "item-1", "not-the-token") is False
    assert await store.ack("hud", "item-1", item.lease_token) is True
    assert await store.ack("hud", "item-1", item.lease_token) is False
    assert await store.queue_stats("hud") == QueueStats(depth=0, oldest_age_seconds=0.0)
    assert await store.enqueue("hud", "item-1", {"body": 2}) is True


async def test_release_counts_the_attempt_replaces_the_payload_and_delays(
    store: RetryQueue,
) -> None:
    await store.enqueue("hud", "item-1", {"body": 1})
    (item,) = await store.lease("hud", lease_seconds=30)
    assert await store.release("hud", "item-1", "not-the-token", delay=0) is False
    assert await store.release("hud", "item-1", item.lease_token, delay=60, payload={"body": 2})
    assert await store.release("hud", "item-1", item.lease_token, delay=0) is False
    assert await store.lease("hud", lease_seconds=30) == []
    assert (await store.queue_stats("hud")).depth == 1

    await store.enqueue("other", "item-2", {"body": 3})
    (again,) = await store.lease("other", lease_seconds=30)
    assert await store.release("other", "item-2", again.lease_token, delay=0)
    (third,) = await store.lease("other", lease_seconds=30)
    assert (third.attempts, third.payload) == (1, {"body": 3})


async def test_released_payload_replacement_is_what_the_next_lease_sees(
    store: RetryQueue,
) -> None:
    await store.enqueue("hud", "item-1", {"body": 1})
    (item,) = await store.lease("hud", lease_seconds=30)
    await store.release("hud", "item-1", item.lease_token, delay=0, payload={"body": 2})
    (again,) = await store.lease("hud", lease_seconds=30)
    assert (again.payload, again.attempts) == ({"body": 2}, 1)


async def test_lease_hands_out_the_earliest_ready_items_up_to_the_limit(
    store: RetryQueue,
) -> None:
    await store.enqueue("hud", "later", {}, delay=0.0)
    await store.enqueue("hud", "delayed", {}, delay=60)
    await store.enqueue("hud", "later-still", {}, delay=0.0)
    first = await store.lease("hud", lease_seconds=30, limit=1)
    rest = await store.lease("hud", lease_seconds=30, limit=10)
    assert [item.item_id for item in first + rest] == ["later", "later-still"]
    assert await store.lease("other-queue", lease_seconds=30) == []


async def test_queue_stats_count_every_item_and_age_the_oldest(store: RetryQueue) -> None:
    assert (await store.queue_stats("hud")).depth == 0
    await store.enqueue("hud", "ready", {})
    await store.enqueue("hud", "delayed", {}, delay=60)
    await store.enqueue("hud", "leased", {})
    await store.lease("hud", lease_seconds=30, limit=1)

    async def aged() -> bool:
        return (await store.queue_stats("hud")).oldest_age_seconds >= 0.1

    await eventually(aged)
    stats = await store.queue_stats("hud")
    assert stats.depth == 3
    assert 0.1 <= stats.oldest_age_seconds < 5


# --- temporary demotions (SPEC §10.1) ---------------------------------------------


async def test_waking_retries_readies_items_in_backoff_but_not_leased_or_fresh_ones(
    store: RetryQueue,
) -> None:
    await store.enqueue("hud", "failed", {"n": 1})
    await store.enqueue("hud", "held", {"n": 2})
    await store.enqueue("hud", "scheduled", {"n": 3}, delay=60)  # delayed on purpose
    failed, held = await store.lease("hud", lease_seconds=30, limit=2)
    assert await store.release("hud", failed.item_id, failed.lease_token, delay=60)
    assert await store.lease("hud", lease_seconds=30) == []

    assert await store.wake_retries("hud") == 1
    (woken,) = await store.lease("hud", lease_seconds=30)
    assert (woken.item_id, woken.attempts) == ("failed", 1)
    assert await store.lease("hud", lease_seconds=30) == []  # held still leased, scheduled waits
    assert await store.extend_lease("hud", held.item_id, held.lease_token, lease_seconds=30)
    assert await store.wake_retries("hud") == 0
    assert await store.wake_retries("empty-queue") == 0

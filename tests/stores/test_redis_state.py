"""What only the Redis store promises: failing closed, and Cluster-safe key layout."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
import redis.asyncio as redis
from redis.cluster import key_slot

from crcr.stores.keys import RedisKeys
from crcr.stores.redis_state import RedisStateStore
from crcr.stores.state import JobRecord, StateStoreUnavailable


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A local port that is bound but never listens, so connecting is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


async def test_an_unreachable_redis_is_reported_as_unavailable(closed_port: int) -> None:
    store = RedisStateStore.from_url(f"redis://127.0.0.1:{closed_port}/15", timeout=1.0)
    try:
        with pytest.raises(StateStoreUnavailable, match="Redis is unavailable"):
            await store.ping()
        with pytest.raises(StateStoreUnavailable):
            await store.hit_rate_limit("org/repo", 100, 60)
        with pytest.raises(StateStoreUnavailable):
            await store.transition_job(
                "job", allowed_from=[None], new=JobRecord("DISPATCHED"), ttl=60
            )
    finally:
        await store.close()


def test_every_key_of_a_queue_shares_one_cluster_slot() -> None:
    keys = RedisKeys("crcr:")
    parts = ["items", "attempts", "leases", "ready", "enqueued"]
    slots = {key_slot(keys.queue("hud-retry", part).encode()) for part in parts}
    assert len(slots) == 1


def test_keys_carry_the_prefix_and_a_hash_tag_that_braces_cannot_break() -> None:
    keys = RedisKeys("crcr:")
    assert keys.job("d1:org/r:1:1:build") == "crcr:{job:d1%3Aorg/r%3A1%3A1%3Abuild}"
    assert keys.queue("hud", "ready") == "crcr:{q:hud}:ready"
    tricky = keys.queue("a}b{c", "items")
    assert tricky.startswith("crcr:{q:a%7Db%7Bc}")
    with pytest.raises(ValueError, match="prefix"):
        RedisKeys("crcr:{x}:")


async def test_the_combined_rate_limit_call_survives_a_script_flush(
    redis_url: str, redis_namespace: str
) -> None:
    store = RedisStateStore.from_url(redis_url, prefix=redis_namespace)
    try:
        assert (await store.hit_rate_limit_and_get_dispatch("org/r", 5, 60, "d", "org/r"))[
            0
        ].allowed
        admin = redis.Redis.from_url(redis_url)
        await admin.script_flush()  # as after a Redis restart
        await admin.aclose()
        decision, record = await store.hit_rate_limit_and_get_dispatch("org/r", 5, 60, "d", "org/r")
        assert (decision.allowed, decision.remaining, record) == (True, 3, None)
    finally:
        await store.close()

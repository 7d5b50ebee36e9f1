"""A fresh state store per test, on each backend."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import redis.asyncio as redis

from crcr.stores.redis_state import RedisStateStore
from crcr.stores.sqlite_state import SqliteStateStore
from crcr.stores.state import StateStore


async def _delete_namespace(url: str, prefix: str) -> None:
    client = redis.from_url(url)
    try:
        keys = [key async for key in client.scan_iter(match=f"{prefix}*", count=500)]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


@pytest.fixture(params=[pytest.param("redis", marks=pytest.mark.redis), "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StateStore]:
    """A store with nothing in it: Redis under a namespace of its own, or a new file."""
    if request.param == "sqlite":
        sqlite_store = await SqliteStateStore.open(tmp_path / "state.db")
        yield sqlite_store
        await sqlite_store.close()
        return
    url: str = request.getfixturevalue("redis_url")
    prefix = f"crcr:test-{uuid.uuid4().hex[:12]}:"
    redis_store = RedisStateStore.from_url(url, prefix=prefix)
    yield redis_store
    await redis_store.close()
    await _delete_namespace(url, prefix)

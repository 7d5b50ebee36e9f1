"""A fresh state store per test, on each backend."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from crcr.stores.redis.state import RedisStateStore
from crcr.stores.sqlite.state import SqliteStateStore
from crcr.stores.state import StateStore


@pytest.fixture(params=[pytest.param("redis", marks=pytest.mark.redis), "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StateStore]:
    """A store with nothing in it: Redis under a namespace of its own, or a new file."""
    if request.param == "sqlite":
        sqlite_store = await SqliteStateStore.open(tmp_path / "state.db")
        yield sqlite_store
        await sqlite_store.close()
        return
    url: str = request.getfixturevalue("redis_url")
    prefix: str = request.getfixturevalue("redis_namespace")
    redis_store = RedisStateStore.from_url(url, prefix=prefix)
    yield redis_store
    await redis_store.close()

"""A fresh state store per test, on each backend."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from crcr.stores.redis.state import RedisStateStore
from crcr.stores.sqlite.state import SqliteStateStore
from crcr.stores.state import StateStore

BACKENDS = [
    pytest.param("redis", marks=pytest.mark.redis),
    pytest.param("redis-cluster", marks=pytest.mark.redis),
    "sqlite",
]


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StateStore]:
    """A store with nothing in it: Redis or a three-master Redis Cluster under a namespace
    of its own, or a new SQLite file.
    """
    if request.param == "sqlite":
        sqlite_store = await SqliteStateStore.open(tmp_path / "state.db")
        yield sqlite_store
        await sqlite_store.close()
        return
    cluster = request.param == "redis-cluster"
    url: str = request.getfixturevalue("redis_cluster_url" if cluster else "redis_url")
    prefix: str = request.getfixturevalue("cluster_namespace" if cluster else "redis_namespace")
    redis_store = RedisStateStore.from_url(url, prefix=prefix, cluster=cluster)
    await redis_store.connect()  # as the factory does: node discovery before concurrency
    yield redis_store
    await redis_store.close()

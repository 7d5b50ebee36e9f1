"""The factory opens Redis when a URL is configured and SQLite otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from crcr.settings import Settings
from crcr.stores.factory import open_state_store
from crcr.stores.redis.state import RedisStateStore
from crcr.stores.sqlite.state import SqliteStateStore


async def test_without_a_redis_url_the_state_lives_in_sqlite_in_the_data_dir(
    tmp_path: Path,
) -> None:
    settings = Settings(data_dir=tmp_path / "not" / "yet" / "there")
    store = await open_state_store(settings)
    try:
        assert isinstance(store, SqliteStateStore)
        await store.ping()
        assert settings.state_database_path.is_file()
    finally:
        await store.close()


@pytest.mark.redis
async def test_a_redis_url_selects_redis(redis_url: str) -> None:
    store = await open_state_store(Settings(redis_url=redis_url))
    try:
        assert isinstance(store, RedisStateStore)
        await store.ping()
    finally:
        await store.close()

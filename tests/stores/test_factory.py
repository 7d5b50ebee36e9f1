"""The factory opens Redis when a URL is configured and SQLite otherwise."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from redis.asyncio.cluster import RedisCluster

from crcr.config.settings import Settings, SettingsError, load_settings
from crcr.stores.factory import open_state_store
from crcr.stores.redis.state import RedisStateStore
from crcr.stores.sqlite.state import SqliteStateStore
from crcr.stores.state import StateStoreUnavailable


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


@pytest.mark.redis
async def test_redis_cluster_true_opens_a_cluster_client_from_any_node(
    redis_cluster_url: str,
) -> None:
    store = await open_state_store(Settings(redis_url=redis_cluster_url, redis_cluster=True))
    try:
        assert isinstance(store, RedisStateStore)
        assert isinstance(store._client, RedisCluster)
        await store.ping()
        assert len(store._client.get_primaries()) == 3
    finally:
        await store.close()


async def test_a_relay_starts_while_redis_is_down_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="crcr.stores.factory")
    unreachable = "redis://127.0.0.1:1/0"  # port 1: nothing listens there

    store = await open_state_store(Settings(redis_url=unreachable))
    try:
        with pytest.raises(StateStoreUnavailable):
            await store.ping()
    finally:
        await store.close()

    (line,) = [r.getMessage() for r in caplog.records if r.name == "crcr.stores.factory"]
    assert line.startswith("state store unreachable at start-up; serving anyway")
    assert "schema is checked at the next start" in line


async def test_redis_cluster_without_a_url_is_refused_naming_both_settings() -> None:
    with pytest.raises(StateStoreUnavailable, match="CRCR_REDIS_CLUSTER: needs CRCR_REDIS_URL"):
        await open_state_store(Settings(redis_url=None, redis_cluster=True))


def test_redis_cluster_takes_a_boolean(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRCR_REDIS_CLUSTER", "sometimes")
    with pytest.raises(SettingsError, match=r"^CRCR_REDIS_CLUSTER: "):
        load_settings()

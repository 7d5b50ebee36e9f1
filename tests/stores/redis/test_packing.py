"""Commands packed by hiredis: the same bytes redis-py would send, and a real server agrees."""

from __future__ import annotations

import pytest
import redis.asyncio as redis
from redis.asyncio.connection import Connection, SSLConnection
from redis.exceptions import DataError

from crcr.stores.redis.packing import PackedConnection, PackedSSLConnection, pack_with_hiredis

COMMANDS = [
    ("EVALSHA", "0" * 40, 1, "crcr:{job:x}", 3_600_000, "1", 0, "in_progress"),
    ("HSET", b"key", "d:queue_time", 12.5, "d:name", "réseau ✓"),
    ("ZADD", "deadlines", "NX", 1763780000.123456, "job"),
    ("CONFIG GET", "maxmemory"),
    (b"CLIENT LIST",),
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda command: str(command[0]))
def test_the_bytes_are_redis_pys(command: tuple[object, ...]) -> None:
    packed = b"".join(PackedConnection().pack_command(*command))
    reference = b"".join(Connection().pack_command(*command))

    assert packed == reference


def test_what_hiredis_refuses_gets_redis_pys_error() -> None:
    with pytest.raises(DataError):
        PackedConnection().pack_command("SET", "flag", True)


def test_only_known_connection_classes_are_swapped() -> None:
    tcp = pack_with_hiredis(redis.BlockingConnectionPool.from_url("redis://127.0.0.1:6379/0"))
    tls = pack_with_hiredis(redis.BlockingConnectionPool.from_url("rediss://127.0.0.1:6379/0"))

    assert tcp.connection_class is PackedConnection
    assert tls.connection_class is PackedSSLConnection
    assert issubclass(PackedSSLConnection, SSLConnection)


async def test_a_real_server_understands_them(redis_url: str, redis_namespace: str) -> None:
    pool = pack_with_hiredis(
        redis.BlockingConnectionPool.from_url(redis_url, decode_responses=True)
    )
    client = redis.Redis.from_pool(pool)
    key = f"{redis_namespace}packed"

    await client.hset(key, mapping={"name": "réseau ✓", "n": 3})
    assert await client.hgetall(key) == {"name": "réseau ✓", "n": "3"}
    assert "maxmemory" in await client.config_get("maxmemory")
    await client.aclose()

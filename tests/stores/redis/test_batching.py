"""Batching Redis commands: concurrent callers share round trips and get their own replies."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as redis
from redis.asyncio.connection import Connection
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from crcr.stores.redis.batching import CommandBatcher


class CountingConnection(Connection):
    """A real connection that counts the batches of commands it packs: one per round
    trip (its handshake packs commands one by one)."""

    batches = 0

    def pack_commands(self, commands: Any) -> list[bytes]:
        type(self).batches += 1
        return super().pack_commands(commands)


class CountingClient(redis.Redis):
    """A real client whose connections count the round trips they make."""

    @property
    def round_trips(self) -> int:
        return int(self.connection_pool.connection_class.batches)


@pytest.fixture
async def client(redis_url: str, redis_namespace: str) -> AsyncIterator[CountingClient]:
    counting = type("CountingForThisTest", (CountingConnection,), {"batches": 0})
    connection = CountingClient.from_url(
        redis_url, decode_responses=True, connection_class=counting
    )
    yield connection
    await connection.aclose()


async def test_each_caller_gets_its_own_replies_in_order(
    client: CountingClient, redis_namespace: str
) -> None:
    batcher = CommandBatcher(client, timeout=5)

    async def caller(n: int) -> list[Any]:
        key = f"{redis_namespace}n{n}"
        return await batcher.execute([("SET", key, n), ("INCRBY", key, n), ("GET", key)])

    replies = await asyncio.gather(*(caller(n) for n in range(100)))

    assert replies == [[True, 2 * n, str(2 * n)] for n in range(100)]


async def test_concurrent_callers_share_round_trips(
    client: CountingClient, redis_namespace: str
) -> None:
    batcher = CommandBatcher(client, timeout=5)

    await asyncio.gather(*(batcher.execute([("PING",)]) for _ in range(50)))

    # The first caller's pipeline leaves on the next loop turn with all 50 in it.
    assert client.round_trips == 1


async def test_a_lone_caller_is_sent_at_once(client: CountingClient) -> None:
    batcher = CommandBatcher(client, timeout=5)

    assert await batcher.execute([("PING",)]) == [True]
    assert await batcher.execute([("ECHO", "again")]) == ["again"]
    assert client.round_trips == 2


async def test_a_failed_command_fails_only_its_own_reply(
    client: CountingClient, redis_namespace: str
) -> None:
    batcher = CommandBatcher(client, timeout=5)
    hash_key = f"{redis_namespace}hash"
    await client.hset(hash_key, "field", "value")

    wrong, right = await asyncio.gather(
        batcher.execute([("INCR", hash_key), ("HGET", hash_key, "field")]),
        batcher.execute([("ECHO", "fine")]),
    )

    assert isinstance(wrong[0], ResponseError)
    assert wrong[1] == "value"
    assert right == ["fine"]


async def test_a_caller_that_gives_up_does_not_disturb_the_others(client: CountingClient) -> None:
    batcher = CommandBatcher(client, timeout=5)
    impatient = asyncio.create_task(batcher.execute([("ECHO", "late")]))
    patient = asyncio.create_task(batcher.execute([("ECHO", "kept")]))
    await asyncio.sleep(0)  # both are queued; the pipeline has not left yet
    impatient.cancel()

    assert await patient == ["kept"]
    assert impatient.cancelled()


async def test_an_unreachable_server_fails_every_caller_of_the_batch() -> None:
    unreachable = redis.Redis(host="127.0.0.1", port=1, retry=Retry(NoBackoff(), 0))
    batcher = CommandBatcher(unreachable, timeout=5)

    results = await asyncio.gather(
        *(batcher.execute([("PING",)]) for _ in range(3)), return_exceptions=True
    )

    assert all(isinstance(result, RedisConnectionError) for result in results)
    await unreachable.aclose()


async def test_a_server_that_never_answers_times_the_whole_batch_out() -> None:
    async def swallow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # reads until the client hangs up, answers nothing
        writer.close()

    silent = await asyncio.start_server(swallow, "127.0.0.1", 0)
    port = silent.sockets[0].getsockname()[1]
    client = redis.Redis(host="127.0.0.1", port=port, retry=Retry(NoBackoff(), 0))
    batcher = CommandBatcher(client, timeout=0.2)

    results = await asyncio.gather(
        *(batcher.execute([("PING",)]) for _ in range(3)), return_exceptions=True
    )

    assert all(isinstance(result, TimeoutError) for result in results)
    await client.aclose()
    silent.close()


async def test_commands_sent_without_waiting_ride_with_the_next_callers_and_before_them(
    client: CountingClient, redis_namespace: str
) -> None:
    batcher = CommandBatcher(client, timeout=5)
    key = f"{redis_namespace}counter"

    batcher.send([("SET", key, 41)])
    replies = await batcher.execute([("INCR", key)])

    assert replies == [42]
    assert client.round_trips == 1


async def test_a_failure_of_commands_nobody_waits_for_is_dropped_and_flush_returns() -> None:
    unreachable = redis.Redis(host="127.0.0.1", port=1, retry=Retry(NoBackoff(), 0))
    batcher = CommandBatcher(unreachable, timeout=5)

    batcher.send([("PING",)])
    await batcher.flush()

    results = await asyncio.gather(batcher.execute([("PING",)]), return_exceptions=True)
    assert isinstance(results[0], RedisConnectionError)  # the batcher still works
    await unreachable.aclose()


async def test_a_connection_the_server_closed_is_reopened_within_the_retries(
    redis_url: str,
) -> None:
    """The batcher keeps one connection: redis-py's retries (the store allows two)
    reopen it within the same batch, and without any the next batch does."""
    retrying = redis.Redis.from_url(redis_url, decode_responses=True, retry=Retry(NoBackoff(), 1))
    once = redis.Redis.from_url(redis_url, decode_responses=True, retry=Retry(NoBackoff(), 0))
    for client in (retrying, once):
        batcher = CommandBatcher(client, timeout=5)
        (first_id,) = await batcher.execute([("CLIENT", "ID")])
        assert await client.client_kill_filter(_id=first_id) == 1

        results = await asyncio.gather(batcher.execute([("CLIENT", "ID")]), return_exceptions=True)

        if client is retrying:
            assert isinstance(results[0], list) and results[0] != [first_id]  # a new one
        else:
            assert isinstance(results[0], RedisConnectionError)
        (again,) = await batcher.execute([("CLIENT", "ID")])
        assert again != first_id
        await batcher.close()
        await client.aclose()


async def test_a_closed_batcher_sends_what_was_queued_and_opens_no_connection_again(
    client: CountingClient, redis_namespace: str
) -> None:
    """Whatever still calls after the store closed (a hook, the audit trail's drain) must
    not open a connection that nobody is left to close."""
    batcher = CommandBatcher(client, timeout=5)
    batcher.send([("SET", f"{redis_namespace}queued", "yes")])

    await batcher.close()

    assert await client.get(f"{redis_namespace}queued") == "yes"
    trips = client.round_trips
    with pytest.raises(RedisConnectionError, match="closed"):
        await batcher.execute([("PING",)])
    batcher.send([("SET", f"{redis_namespace}late", "yes")])
    await batcher.flush()
    assert client.round_trips == trips
    assert await client.get(f"{redis_namespace}late") is None

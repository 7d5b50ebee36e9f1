"""What every part of the Redis store stands on: its connections and its script runner."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

import redis.asyncio as redis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError

from crcr.stores.keys import DEFAULT_PREFIX, RedisKeys
from crcr.stores.redis.batching import Command, CommandBatcher
from crcr.stores.redis.errors import raise_failed, unavailable_on_error
from crcr.stores.redis.packing import pack_with_hiredis

# redis-py types replies as `bytes | str`; the client decodes responses, so they are str
# (hence the few `type: ignore[assignment]` in the store's parts).


class RedisStoreBase:
    """The connections, key layout and Lua scripts that the Redis store's parts share.

    `prefix` namespaces every key, so tests and several deployments can share a
    database without touching each other's keys.
    """

    def __init__(
        self,
        client: redis.Redis,
        *,
        prefix: str = DEFAULT_PREFIX,
        batch_client: redis.Redis | None = None,
        timeout: float = 5.0,
    ) -> None:
        self._client = client
        self._keys = RedisKeys(prefix)
        self._scripts: dict[str, AsyncScript] = {}
        self._batch_client = batch_client
        self._batcher = CommandBatcher(batch_client or client, timeout=timeout)

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        timeout: float = 5.0,
        max_connections: int = 32,
    ) -> Self:
        """Build a store on two connection pools; nothing connects until the first call.

        The pools block (up to `timeout`) rather than failing when every connection is
        busy, so a burst of callbacks queues for Redis instead of erroring. Batched
        commands have a pool of their own without a per-reply socket timeout: redis-py
        would arm one for every reply of a pipeline, and the batcher times the whole
        round trip instead.
        """

        def pool(socket_timeout: float | None) -> redis.BlockingConnectionPool:
            return pack_with_hiredis(
                redis.BlockingConnectionPool.from_url(
                    url,
                    max_connections=max_connections,
                    timeout=timeout,
                    decode_responses=True,
                    socket_timeout=socket_timeout,
                    socket_connect_timeout=timeout,
                    # Ride out a blip, but fail closed within a second when Redis is gone.
                    retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), retries=2),
                )
            )

        return cls(
            redis.Redis.from_pool(pool(timeout)),
            prefix=prefix,
            batch_client=redis.Redis.from_pool(pool(None)),
            timeout=timeout,
        )

    def _script(self, script: str) -> AsyncScript:
        registered = self._scripts.get(script)
        if registered is None:
            registered = self._scripts[script] = self._client.register_script(script)
        return registered

    async def _run(self, script: str, keys: Sequence[str], args: Sequence[str | int]) -> Any:
        return (await self._run_with(script, keys, args))[0]

    async def _run_with(
        self,
        script: str,
        keys: Sequence[str],
        args: Sequence[str | int],
        then: Sequence[Command] = (),
    ) -> list[Any]:
        """Run a script, then the commands `then`, in one round trip shared with other callers.

        EVALSHA is sent by hand: redis-py's script objects first ask SCRIPT EXISTS, a
        round trip of its own. If Redis has lost the script (restarted, flushed) it is
        loaded and everything is sent again, so `then` must be safe to repeat.
        """
        registered = self._script(script)
        for attempt in range(2):
            evalsha = ("EVALSHA", registered.sha, len(keys), *keys, *args)
            with unavailable_on_error():
                replies = await self._batcher.execute([evalsha, *then])
            if isinstance(replies[0], NoScriptError) and attempt == 0:
                with unavailable_on_error():
                    registered.sha = await self._client.script_load(registered.script)
                continue
            raise_failed(replies)
            return replies
        raise AssertionError("unreachable")

    async def _pipelined(
        self, script: str, calls: Sequence[tuple[Sequence[str], Sequence[str | int]]]
    ) -> list[Any]:
        """Run one script many times in a single round trip (each run stays atomic)."""
        registered = self._script(script)
        with unavailable_on_error():
            async with self._client.pipeline(transaction=False) as pipe:
                for keys, args in calls:
                    await registered(keys=list(keys), args=list(args), client=pipe)
                results: list[Any] = await pipe.execute()
        return results

    # --- health and lifecycle -------------------------------------------------
    async def ping(self) -> None:
        with unavailable_on_error():
            await self._client.ping()

    async def close(self) -> None:
        await self._batcher.flush()
        await self._client.aclose()
        if self._batch_client is not None:
            await self._batch_client.aclose()

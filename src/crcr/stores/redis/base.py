"""What every part of the Redis store stands on: its connections and its script runner."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Self

import redis.asyncio as redis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError

from crcr.stores.keys import DEFAULT_PREFIX, RedisKeys
from crcr.stores.redis.batching import Command, CommandBatcher
from crcr.stores.redis.errors import (
    is_unavailable,
    raise_failed,
    unavailable,
    unavailable_on_error,
)
from crcr.stores.redis.packing import pack_with_hiredis
from crcr.stores.roles.lifecycle import Lifecycle

# redis-py types replies as `bytes | str`; the client decodes responses, so they are str
# (hence the few `type: ignore[assignment]` in the store's parts).

Client = redis.Redis | RedisCluster
"""One server (or a replicated primary), or a Redis Cluster: every key's slot is known."""

# A Cluster client opens connections per node and fails rather than waits once a node
# has this many (redis-py's `MaxConnectionsError`, reported as unavailable): commands of
# concurrent callers share pipelines, so few are ever open at once.
_CLUSTER_MAX_CONNECTIONS = 256


class RedisStoreBase(Lifecycle):
    """The connections, key layout and Lua scripts that the Redis store's parts share.

    `prefix` namespaces every key, so tests and several deployments can share a
    database without touching each other's keys.
    """

    def __init__(
        self,
        client: Client,
        *,
        prefix: str = DEFAULT_PREFIX,
        batch_client: Client | None = None,
        timeout: float = 5.0,
    ) -> None:
        self._client = client
        self._on_cluster = isinstance(client, RedisCluster)
        """Asked once: `RedisCluster` is a typing Protocol's subclass, whose `isinstance`
        goes through typing's slow check (a callback's transition asked it each time)."""
        self._keys = RedisKeys(prefix)
        self._scripts: dict[str, AsyncScript] = {}
        self._loading: dict[AsyncScript, asyncio.Future[str]] = {}
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
        cluster: bool = False,
    ) -> Self:
        """Build a store on two connection pools; nothing connects until the first call.

        `cluster`: `url` names any node of a Redis Cluster, whose other nodes the client
        discovers (its database must be 0, the only one a Cluster has).

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

        if cluster:
            return cls(
                _cluster_client(url, timeout, socket_timeout=timeout),
                prefix=prefix,
                batch_client=_cluster_client(url, timeout, socket_timeout=None),
                timeout=timeout,
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

    async def _reload(self, registered: AsyncScript) -> None:
        """Load a script Redis lost (restarted, flushed, a new Cluster node) once for all
        the callers that found it missing together, not once each: a burst of 500
        callers would each take a connection for it, and a Cluster client refuses more
        than its limit (redis-py's `MaxConnectionsError`, so every caller failed)."""
        loading = self._loading.get(registered)
        if loading is None or loading.done():
            loading = asyncio.ensure_future(self._client.script_load(registered.script))
            self._loading[registered] = loading
        with unavailable_on_error():
            registered.sha = await asyncio.shield(loading)

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
            try:  # `unavailable_on_error` spelled out: no generator per call on this path
                replies = await self._batcher.execute([evalsha, *then])
            except Exception as exc:
                if is_unavailable(exc):
                    raise unavailable(exc) from exc
                raise
            if isinstance(replies[0], NoScriptError) and attempt == 0:
                await self._reload(registered)
                continue
            raise_failed(replies)
            return replies
        raise AssertionError("unreachable")

    async def _pipelined(
        self, script: str, calls: Sequence[tuple[Sequence[str], Sequence[str | int]]]
    ) -> list[Any]:
        """Run one script many times in a single round trip (each run stays atomic).

        The runs may touch keys in different Cluster slots: the pipeline is split by node,
        and nothing is promised across runs. Runs refused for want of the script (a
        restarted or new node) are sent again once it is loaded, the others are not.
        """
        registered = self._script(script)
        results: list[Any] = [None] * len(calls)
        todo = list(range(len(calls)))
        for attempt in range(2):
            commands = [
                ("EVALSHA", registered.sha, len(calls[i][0]), *calls[i][0], *calls[i][1])
                for i in todo
            ]
            with unavailable_on_error():
                replies = await self._batcher.execute(commands)
            for i, reply in zip(todo, replies, strict=True):
                results[i] = reply
            todo = [i for i in todo if isinstance(results[i], NoScriptError)]
            if not todo or attempt == 1:
                break
            await self._reload(registered)
        raise_failed(results)
        return results

    # --- health and lifecycle -------------------------------------------------
    async def connect(self) -> None:
        """Discover a Cluster's nodes now, before callers run commands concurrently.

        redis-py's Cluster client discovers them on first use, and commands racing that
        discovery can be handed a connection it is closing (an AttributeError on the
        connection's writer, not a RedisError). A single server needs nothing here.
        """
        with unavailable_on_error():
            for client in (self._client, self._batch_client):
                if isinstance(client, RedisCluster):
                    await client.initialize()

    async def ping(self) -> None:
        with unavailable_on_error():
            await self._client.ping()

    async def close(self) -> None:
        await self._batcher.close()
        await self._client.aclose()
        if self._batch_client is not None:
            await self._batch_client.aclose()


def _cluster_client(url: str, timeout: float, *, socket_timeout: float | None) -> RedisCluster:
    """A Cluster client from one node's URL, retrying as the single-server pools do."""
    return RedisCluster.from_url(
        url,
        decode_responses=True,
        socket_timeout=socket_timeout,
        socket_connect_timeout=timeout,
        max_connections=_CLUSTER_MAX_CONNECTIONS,
        retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), retries=2),
    )

"""Commands of concurrent callers sent to Redis together: one pipeline per round trip.

redis-py spends about 100 µs of CPU on every round trip it makes on its own (a
connection out of the pool and back, a timeout, the retry wrapper), but only about 25 µs
per command inside a pipeline of a few dozen. Under load many callbacks wait on Redis at
once, so their commands are queued and sent in the next pipeline: while one pipeline is
out, the next one fills. A lone caller waits for nobody; its pipeline leaves on the next
turn of the event loop.

Each caller's commands stay adjacent and in order, and every script stays atomic on the
server, so batching changes no outcome: a pipeline without MULTI promises nothing about
the commands of different callers, and none relies on that. On a Redis Cluster the
pipeline is split by node, so a caller's commands stay in order only within one slot:
a caller whose commands span slots relies on none of their order.

On a single server the batch is written and read on one connection of the batcher's
own (`_round_trip`): only one pipeline is out at a time, and redis-py's pipeline object
around that connection (its pool checkout and release, per-command option handling,
operation metrics and reset) cost more CPU per round trip than the commands' packing
and parsing.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import redis.asyncio as redis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.connection import AbstractConnection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

Command = Sequence[Any]
Waiting = tuple[Sequence[Command], asyncio.Future[list[Any]] | None]
"""Commands queued for the next pipeline, with the future of whoever waits on their replies."""


class CommandBatcher:
    """Queues commands and sends each batch as one non-transactional pipeline."""

    def __init__(self, client: redis.Redis | RedisCluster, *, timeout: float) -> None:
        self._client = client
        self._on_cluster = isinstance(client, RedisCluster)  # asked once: a slow isinstance
        self._timeout = timeout
        self._waiting: list[Waiting] = []
        self._sender: asyncio.Task[None] | None = None
        self._connection: AbstractConnection | None = None
        self._closed = False
        self._parsers: dict[str, Callable[..., Any] | None] = {}
        """redis-py's reply callback of each command name, looked up once (its own table
        upper-cases the name on every lookup)."""

    async def execute(self, commands: Sequence[Command]) -> list[Any]:
        """Send `commands` back to back; their replies in order, a failed one as its exception.

        A connection failure fails every caller of that pipeline with the same exception,
        and so does a round trip longer than the timeout (`TimeoutError`).
        """
        future: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
        self._queue(commands, future)
        return await future

    def send(self, commands: Sequence[Command]) -> None:
        """Queue `commands` for the next pipeline and return at once, replies unread.

        For a write whose loss only costs a harmless repeat later: a failure is dropped.
        Commands queued after these are still sent after them.
        """
        self._queue(commands, None)

    def _queue(self, commands: Sequence[Command], future: asyncio.Future[list[Any]] | None) -> None:
        if self._closed:
            # Sending would open a connection again that nobody is left to close.
            if future is not None:
                future.set_exception(RedisConnectionError("the state store is closed"))
            return
        self._waiting.append((commands, future))
        if self._sender is None:
            self._sender = asyncio.create_task(self._send_while_waiting())

    async def flush(self) -> None:
        """Return once everything queued so far has been sent (before closing the client)."""
        if self._sender is not None:
            await asyncio.wait([self._sender])

    async def close(self) -> None:
        """Send what is queued, refuse what comes later, give the connection back."""
        self._closed = True
        await self.flush()
        if self._connection is not None and isinstance(self._client, redis.Redis):
            connection, self._connection = self._connection, None
            await self._client.connection_pool.release(connection)

    async def _send_while_waiting(self) -> None:
        try:
            while self._waiting:
                batch, self._waiting = self._waiting, []
                await self._send(batch)
        finally:
            self._sender = None

    async def _send(self, batch: list[Waiting]) -> None:
        try:
            async with asyncio.timeout(self._timeout):
                replies = await self._round_trip([c for commands, _ in batch for c in commands])
        except Exception as exc:
            for _, future in batch:
                if future is not None and not future.done():
                    future.set_exception(exc)
            return
        except BaseException:
            for _, future in batch:
                if future is not None:
                    future.cancel()
            raise
        start = 0
        for commands, future in batch:
            if future is not None and not future.done():  # its caller may have given up
                future.set_result(replies[start : start + len(commands)])
            start += len(commands)

    async def _round_trip(self, commands: list[Command]) -> list[Any]:
        """Send `commands` in one write and read their replies, an error reply as its
        exception; a connection failure is retried as redis-py's pipeline retries it."""
        client = self._client
        if self._on_cluster:
            assert isinstance(client, RedisCluster)
            async with client.pipeline(False) as pipe:
                for command in commands:
                    pipe.execute_command(*command)
                return list(await pipe.execute(raise_on_error=False))
        connection = self._connection
        if connection is None:
            assert isinstance(client, redis.Redis)  # not a Cluster: asked once per connection
            pool = client.connection_pool
            connection = self._connection = await pool.get_connection()  # type: ignore[no-untyped-call]

        async def once() -> list[Any]:
            await connection.send_packed_command(
                connection.pack_commands(commands), check_health=False
            )
            replies: list[Any] = []
            for command in commands:
                try:
                    reply = await connection.read_response()
                except ResponseError as error:  # the reply of this command alone
                    replies.append(error)
                    continue
                parse = self._parser(command[0])
                if parse is not None:
                    reply = parse(reply)
                    if inspect.isawaitable(reply):
                        reply = await reply
                replies.append(reply)
            return replies

        async def reconnect(error: Exception) -> None:
            await connection.disconnect()  # redis-py 6.0, the floor, takes no `error`

        return await connection.retry.call_with_retry(once, reconnect)

    def _parser(self, name: str) -> Callable[..., Any] | None:
        """redis-py's callback for the replies of command `name` (None: taken as read)."""
        try:
            return self._parsers[name]
        except KeyError:
            parser = self._parsers[name] = self._client.response_callbacks.get(name)
            return parser

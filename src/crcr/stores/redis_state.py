"""The Redis state store: shared by every relay instance, atomic through Lua scripts."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import redis.asyncio as redis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError

from crcr.stores import redis_scripts as lua
from crcr.stores.keys import (
    DEFAULT_PREFIX,
    QUEUE_TTL_SECONDS,
    RedisKeys,
    decode,
    decode_mapping,
    encode,
    ttl_milliseconds,
)
from crcr.stores.redis_batching import Command, CommandBatcher
from crcr.stores.redis_errors import raise_failed, unavailable_on_error
from crcr.stores.redis_packing import pack_with_hiredis
from crcr.stores.state import (
    JobRecord,
    LeasedItem,
    QueueStats,
    RateDecision,
    Transition,
)

# Records are hashes of JSON values so that a merge is an HSET of the changed fields,
# with no JSON handling in Lua (cjson rounds numbers to 14 digits).
_DATA = "d:"
_EXISTS = "~"
_QUEUE_TTL_MS = QUEUE_TTL_SECONDS * 1000
_QUEUE_PARTS = ("items", "attempts", "leases", "ready", "enqueued")
# redis-py types replies as `bytes | str`; the client decodes responses, so they are str
# (hence the few `type: ignore[assignment]` below).


def _microseconds(seconds: float) -> int:
    return max(0, round(seconds * 1_000_000))


def _data_fields(data: Mapping[str, Any]) -> list[str]:
    fields: list[str] = []
    for name, value in data.items():
        fields += [_DATA + name, encode(value)]
    return fields


def _data_of(fields: Mapping[str, str]) -> dict[str, Any]:
    return {k.removeprefix(_DATA): decode(v) for k, v in fields.items() if k.startswith(_DATA)}


def _transition_args(
    allowed_from: Collection[str | None], new: JobRecord, ttl: int
) -> list[str | int]:
    """TRANSITION_JOB's ARGV: ttl, whether "no record" is allowed, the allowed states, the new."""
    states = [state for state in allowed_from if state is not None]
    return [
        ttl_milliseconds(ttl),
        "1" if None in allowed_from else "0",
        len(states),
        *states,
        new.state,
        *_data_fields(new.data),
    ]


def _rate_args(limit: int, window_seconds: float) -> list[str | int]:
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    return [limit, max(1, _microseconds(window_seconds)), uuid.uuid4().hex]


def _rate_decision(reply: Sequence[Any]) -> RateDecision:
    allowed, remaining, retry_after = reply
    return RateDecision(bool(allowed), int(remaining), int(retry_after))


def _as_dict(flat: Sequence[str]) -> dict[str, str]:
    return dict(zip(flat[::2], flat[1::2], strict=True))


class RedisStateStore:
    """`StateStore` on one Redis (or Cluster-compatible) database.

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
    ) -> RedisStateStore:
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

    # --- health and lifecycle -------------------------------------------------
    async def ping(self) -> None:
        with unavailable_on_error():
            await self._client.ping()

    async def close(self) -> None:
        await self._batcher.flush()
        await self._client.aclose()
        if self._batch_client is not None:
            await self._batch_client.aclose()

    # --- idempotency and dispatch records -------------------------------------
    async def claim_once(self, key: str, ttl: int) -> bool:
        with unavailable_on_error():
            claimed = await self._client.set(
                self._keys.claim(key), "1", nx=True, px=ttl_milliseconds(ttl)
            )
        return bool(claimed)

    async def put_dispatch(
        self, delivery_id: str, repo: str, record: Mapping[str, Any], ttl: int
    ) -> bool:
        args: list[str | int] = [ttl_milliseconds(ttl), _EXISTS, "1", *_data_fields(record)]
        created = await self._run(lua.CREATE_RECORD, [self._keys.dispatch(delivery_id, repo)], args)
        return bool(created)

    async def update_dispatch(
        self, delivery_id: str, repo: str, changes: Mapping[str, Any], ttl: int
    ) -> bool:
        args: list[str | int] = [ttl_milliseconds(ttl), *_data_fields(changes)]
        updated = await self._run(lua.UPDATE_RECORD, [self._keys.dispatch(delivery_id, repo)], args)
        return bool(updated)

    async def put_dispatches(
        self, delivery_id: str, records: Mapping[str, Mapping[str, Any]], ttl: int
    ) -> set[str]:
        calls: dict[str, tuple[list[str], list[str | int]]] = {
            repo: ([self._keys.dispatch(delivery_id, repo)],
                   [ttl_milliseconds(ttl), _EXISTS, "1", *_data_fields(record)])
            for repo, record in records.items()
        }  # fmt: skip
        results = await self._pipelined(lua.CREATE_RECORD, list(calls.values()))
        return {repo for repo, created in zip(calls, results, strict=True) if created}

    async def update_dispatches(
        self, delivery_id: str, changes: Mapping[str, Mapping[str, Any]], ttl: int
    ) -> None:
        calls: list[tuple[list[str], list[str | int]]] = [
            ([self._keys.dispatch(delivery_id, repo)], [ttl_milliseconds(ttl), *_data_fields(c)])
            for repo, c in changes.items()
        ]
        await self._pipelined(lua.UPDATE_RECORD, calls)

    async def _pipelined(
        self, script: str, calls: Sequence[tuple[Sequence[str], Sequence[str | int]]]
    ) -> list[Any]:
        """Run one script many times in a single round trip (each run stays atomic)."""
        registered = self._scripts.get(script)
        if registered is None:
            registered = self._scripts[script] = self._client.register_script(script)
        with unavailable_on_error():
            async with self._client.pipeline(transaction=False) as pipe:
                for keys, args in calls:
                    await registered(keys=list(keys), args=list(args), client=pipe)
                results: list[Any] = await pipe.execute()
        return results

    async def get_dispatch(self, delivery_id: str, repo: str) -> dict[str, Any] | None:
        with unavailable_on_error():
            fields: dict[str, str] = await self._client.hgetall(  # type: ignore[assignment]
                self._keys.dispatch(delivery_id, repo)
            )
        return _data_of(fields) if fields else None

    # --- job state machine ----------------------------------------------------
    async def transition_job(
        self,
        job_key: str,
        *,
        allowed_from: Collection[str | None],
        new: JobRecord,
        ttl: int,
    ) -> Transition:
        args = _transition_args(allowed_from, new, ttl)
        applied, previous = await self._run(lua.TRANSITION_JOB, [self._keys.job(job_key)], args)
        return Transition(applied=bool(applied), previous=_job_record(_as_dict(previous)))

    async def transition_job_and_deadline(
        self,
        job_key: str,
        *,
        allowed_from: Collection[str | None],
        new: JobRecord,
        ttl: int,
        deadline: float | None,
    ) -> Transition:
        """The transition and the deadline change pipelined: one round trip, not two.

        They cannot share a script (the deadlines set lives in another Cluster slot), so
        the deadline change is sent whatever the outcome, in a form that is harmless when
        the transition does not apply: a tracked job's deadline only moves earlier
        (`ZADD LT`, so a duplicate keeps the first deadline), and an entry added for a
        job found in another state is taken back at once. One found in the new state is
        left tracked: an identical transition applied concurrently may have sent its
        deadline after this one. (A repeat that comes after the job left the list
        therefore tracks it again, and the sweeper visits it once more.)
        """
        args = _transition_args(allowed_from, new, ttl)
        deadlines = self._keys.deadlines()
        track: list[Command] = (
            [("ZREM", deadlines, job_key)]
            if deadline is None
            else [
                ("ZADD", deadlines, "LT", deadline, job_key),
                ("PEXPIRE", deadlines, _QUEUE_TTL_MS),
            ]
        )
        reply, tracked, *_ = await self._run_with(
            lua.TRANSITION_JOB, [self._keys.job(job_key)], args, then=track
        )
        applied, previous = reply
        transition = Transition(applied=bool(applied), previous=_job_record(_as_dict(previous)))
        stale = deadline is not None and not transition.applied and tracked
        if stale and (transition.previous is None or transition.previous.state != new.state):
            await self.untrack_deadline(job_key)
        return transition

    async def restore_job(
        self,
        job_key: str,
        *,
        expected_state: str,
        previous: JobRecord | None,
        ttl: int,
        deadline: float | None,
    ) -> bool:
        ttl_ms = ttl_milliseconds(ttl)
        tracked = "" if deadline is None else repr(float(deadline))
        args: list[str | int] = [expected_state, job_key, tracked, _QUEUE_TTL_MS]
        if previous is not None:
            args += [ttl_ms, previous.state, *_data_fields(previous.data)]
        keys = [self._keys.job(job_key), self._keys.deadlines()]
        return bool(await self._run(lua.RESTORE_JOB, keys, args))

    async def get_job(self, job_key: str) -> JobRecord | None:
        with unavailable_on_error():
            fields: dict[str, str] = await self._client.hgetall(  # type: ignore[assignment]
                self._keys.job(job_key)
            )
        return _job_record(fields)

    # --- rate limiting --------------------------------------------------------
    async def hit_rate_limit(self, key: str, limit: int, window_seconds: float) -> RateDecision:
        args = _rate_args(limit, window_seconds)
        reply = await self._run(lua.HIT_RATE_LIMIT, [self._keys.rate(key)], args)
        return _rate_decision(reply)

    async def hit_rate_limit_and_get_dispatch(
        self, key: str, limit: int, window_seconds: float, delivery_id: str, repo: str
    ) -> tuple[RateDecision, dict[str, Any] | None]:
        args = _rate_args(limit, window_seconds)
        dispatch = ("HGETALL", self._keys.dispatch(delivery_id, repo))
        reply, fields = await self._run_with(
            lua.HIT_RATE_LIMIT, [self._keys.rate(key)], args, then=[dispatch]
        )
        return _rate_decision(reply), (_data_of(fields) if fields else None)

    # --- TTL caches -----------------------------------------------------------
    async def cache_get(self, namespace: str, key: str) -> str | None:
        with unavailable_on_error():
            value: str | None = await self._client.get(  # type: ignore[assignment]
                self._keys.cache(namespace, key)
            )
        return value

    async def cache_set(self, namespace: str, key: str, value: str, ttl: float) -> None:
        with unavailable_on_error():
            await self._client.set(
                self._keys.cache(namespace, key), value, px=ttl_milliseconds(ttl)
            )

    async def cache_delete(self, namespace: str, key: str) -> None:
        with unavailable_on_error():
            await self._client.delete(self._keys.cache(namespace, key))

    # --- durable retry queues with leases -------------------------------------
    def _queue_keys(self, queue: str) -> list[str]:
        return [self._keys.queue(queue, part) for part in _QUEUE_PARTS]

    async def enqueue(
        self, queue: str, item_id: str, payload: Mapping[str, Any], delay: float = 0.0
    ) -> bool:
        args: list[str | int] = [item_id, encode(payload), _microseconds(delay), _QUEUE_TTL_MS]
        return bool(await self._run(lua.ENQUEUE, self._queue_keys(queue), args))

    async def lease(self, queue: str, *, lease_seconds: float, limit: int = 10) -> list[LeasedItem]:
        if limit < 1:
            return []
        tokens = [uuid.uuid4().hex for _ in range(limit)]
        args: list[str | int] = [_microseconds(lease_seconds), _QUEUE_TTL_MS, *tokens]
        rows = await self._run(lua.LEASE, self._queue_keys(queue), args)
        return [
            LeasedItem(
                item_id=item_id,
                payload=decode_mapping(payload),
                attempts=int(attempts),
                enqueued_at=int(enqueued_us) / 1_000_000,
                lease_token=token,
            )
            for item_id, payload, attempts, enqueued_us, token in rows
        ]

    async def ack(self, queue: str, item_id: str, lease_token: str) -> bool:
        return bool(await self._run(lua.ACK, self._queue_keys(queue), [item_id, lease_token]))

    async def release(
        self,
        queue: str,
        item_id: str,
        lease_token: str,
        *,
        delay: float,
        payload: Mapping[str, Any] | None = None,
    ) -> bool:
        replace = ["1", encode(payload)] if payload is not None else ["0", ""]
        args: list[str | int] = [
            item_id,
            lease_token,
            _microseconds(delay),
            _QUEUE_TTL_MS,
            *replace,
        ]
        return bool(await self._run(lua.RELEASE, self._queue_keys(queue), args))

    async def queue_stats(self, queue: str) -> QueueStats:
        keys = [self._keys.queue(queue, "items"), self._keys.queue(queue, "enqueued")]
        depth, oldest_us, now_us = await self._run(lua.QUEUE_STATS, keys, [])
        if oldest_us is None:
            return QueueStats(depth=int(depth), oldest_age_seconds=0.0)
        age = max(0.0, (int(now_us) - int(oldest_us)) / 1_000_000)
        return QueueStats(depth=int(depth), oldest_age_seconds=age)

    # --- in-progress tracker --------------------------------------------------
    async def track_deadline(self, job_key: str, deadline: float) -> None:
        key = self._keys.deadlines()
        with unavailable_on_error():
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.zadd(key, {job_key: deadline})
                pipe.pexpire(key, _QUEUE_TTL_MS)
                await pipe.execute()

    async def untrack_deadline(self, job_key: str, *, wait: bool = True) -> None:
        # Batched: every completed callback ends with it, and redis-py's own path for
        # one command costs several times a share of a pipeline.
        command = ("ZREM", self._keys.deadlines(), job_key)
        if not wait:
            self._batcher.send([command])
            return
        with unavailable_on_error():
            replies = await self._batcher.execute([command])
        raise_failed(replies)

    async def overdue(self, now: float, limit: int = 100) -> list[str]:
        # Through the batcher, so that it sees every untrack this process sent before.
        command = ("ZRANGEBYSCORE", self._keys.deadlines(), "-inf", now, "LIMIT", 0, limit)
        with unavailable_on_error():
            (due,) = replies = await self._batcher.execute([command])
        raise_failed(replies)
        return list(due)

    # --- flags and job summaries ----------------------------------------------
    async def set_flag(self, name: str, head_sha: str, repo: str, ttl: int) -> None:
        with unavailable_on_error():
            await self._client.set(
                self._keys.flag(name, head_sha, repo), "1", px=ttl_milliseconds(ttl)
            )

    async def has_flag(self, name: str, head_sha: str, repo: str) -> bool:
        with unavailable_on_error():
            return bool(await self._client.exists(self._keys.flag(name, head_sha, repo)))

    async def put_job_summary(
        self, head_sha: str, repo: str, job_key: str, summary: Mapping[str, Any], ttl: int
    ) -> None:
        ttl_us = ttl_milliseconds(ttl) * 1000
        args: list[str | int] = [job_key, encode(summary), ttl_us]
        await self._run(lua.PUT_SUMMARY, [self._keys.summaries(head_sha, repo)], args)

    async def job_summaries(self, head_sha: str, repo: str) -> dict[str, dict[str, Any]]:
        live = await self._run(lua.LIVE_SUMMARIES, [self._keys.summaries(head_sha, repo)], [])
        return {job_key: decode_mapping(text) for job_key, text in _as_dict(live).items()}

    # --- leader lock ----------------------------------------------------------
    async def acquire_lock(self, name: str, owner: str, ttl: float) -> bool:
        args: list[str | int] = [owner, ttl_milliseconds(ttl)]
        return bool(await self._run(lua.ACQUIRE_LOCK, [self._keys.lock(name)], args))

    async def release_lock(self, name: str, owner: str) -> None:
        await self._run(lua.RELEASE_LOCK, [self._keys.lock(name)], [owner])


def _job_record(fields: Mapping[str, str]) -> JobRecord | None:
    state = fields.get("state")
    return None if state is None else JobRecord(state=state, data=_data_of(fields))

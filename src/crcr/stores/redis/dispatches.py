"""The Redis store's idempotency claims and dispatch records (SPEC §4)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from crcr.stores.keys import ttl_milliseconds
from crcr.stores.redis import scripts as lua
from crcr.stores.redis.base import RedisStoreBase
from crcr.stores.redis.encoding import EXISTS_FIELD, data_fields, data_of
from crcr.stores.redis.errors import unavailable_on_error
from crcr.stores.roles.dispatches import Dispatches, Idempotency


class RedisDispatches(RedisStoreBase, Dispatches, Idempotency):
    """Claims as `SET NX` keys; dispatch records as hashes, created and merged by scripts."""

    async def claim_once(self, key: str, ttl: int) -> bool:
        with unavailable_on_error():
            claimed = await self._client.set(
                self._keys.claim(key), "1", nx=True, px=ttl_milliseconds(ttl)
            )
        return bool(claimed)

    async def put_dispatch(
        self, delivery_id: str, repo: str, record: Mapping[str, Any], ttl: int
    ) -> bool:
        args: list[str | int] = [ttl_milliseconds(ttl), EXISTS_FIELD, "1", *data_fields(record)]
        created = await self._run(lua.CREATE_RECORD, [self._keys.dispatch(delivery_id, repo)], args)
        return bool(created)

    async def update_dispatch(
        self, delivery_id: str, repo: str, changes: Mapping[str, Any], ttl: int
    ) -> bool:
        args: list[str | int] = [ttl_milliseconds(ttl), *data_fields(changes)]
        updated = await self._run(lua.UPDATE_RECORD, [self._keys.dispatch(delivery_id, repo)], args)
        return bool(updated)

    async def put_dispatches(
        self, delivery_id: str, records: Mapping[str, Mapping[str, Any]], ttl: int
    ) -> set[str]:
        calls: dict[str, tuple[list[str], list[str | int]]] = {
            repo: ([self._keys.dispatch(delivery_id, repo)],
                   [ttl_milliseconds(ttl), EXISTS_FIELD, "1", *data_fields(record)])
            for repo, record in records.items()
        }  # fmt: skip
        results = await self._pipelined(lua.CREATE_RECORD, list(calls.values()))
        return {repo for repo, created in zip(calls, results, strict=True) if created}

    async def update_dispatches(
        self, delivery_id: str, changes: Mapping[str, Mapping[str, Any]], ttl: int
    ) -> None:
        calls: list[tuple[list[str], list[str | int]]] = [
            ([self._keys.dispatch(delivery_id, repo)], [ttl_milliseconds(ttl), *data_fields(c)])
            for repo, c in changes.items()
        ]
        await self._pipelined(lua.UPDATE_RECORD, calls)

    async def get_dispatch(self, delivery_id: str, repo: str) -> dict[str, Any] | None:
        with unavailable_on_error():
            fields: dict[str, str] = await self._client.hgetall(  # type: ignore[assignment]
                self._keys.dispatch(delivery_id, repo)
            )
        return data_of(fields) if fields else None

    async def get_dispatches(
        self, delivery_id: str, repos: Sequence[str]
    ) -> dict[str, dict[str, Any]]:
        if not repos:
            return {}
        with unavailable_on_error():
            async with self._client.pipeline(transaction=False) as pipe:
                for repo in repos:
                    pipe.hgetall(self._keys.dispatch(delivery_id, repo))
                replies: list[dict[str, str]] = await pipe.execute()
        return {
            repo: data_of(fields) for repo, fields in zip(repos, replies, strict=True) if fields
        }

"""The Redis store's temporary demotions (SPEC §10.1): one hash, repo → JSON record."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crcr.stores.keys import decode_mapping, encode
from crcr.stores.redis import scripts as lua
from crcr.stores.redis.base import RedisStoreBase
from crcr.stores.redis.errors import unavailable_on_error
from crcr.stores.roles.demotions import Demotions


class RedisDemotions(RedisStoreBase, Demotions):
    """Demotions in one hash without expiry: they end when the relay ends them."""

    async def add_demotion(self, repo: str, record: Mapping[str, Any]) -> bool:
        with unavailable_on_error():
            created = await self._client.hsetnx(
                self._keys.demotions(), repo.lower(), encode(record)
            )
        return bool(created)

    async def update_demotion(self, repo: str, changes: Mapping[str, Any]) -> bool:
        args: list[str | int] = [repo.lower(), encode(dict(changes))]
        return bool(await self._run(lua.UPDATE_DEMOTION, [self._keys.demotions()], args))

    async def remove_demotion(self, repo: str) -> bool:
        with unavailable_on_error():
            removed = await self._client.hdel(self._keys.demotions(), repo.lower())
        return bool(removed)

    async def demotions(self) -> dict[str, dict[str, Any]]:
        with unavailable_on_error():
            found: dict[str, str] = await self._client.hgetall(  # type: ignore[assignment]
                self._keys.demotions()
            )
        return {repo: decode_mapping(text) for repo, text in found.items()}

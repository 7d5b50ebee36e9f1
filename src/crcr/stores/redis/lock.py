"""The Redis store's leader lock, so that one sweeper runs across relay instances."""

from __future__ import annotations

from crcr.stores.keys import ttl_milliseconds
from crcr.stores.redis import scripts as lua
from crcr.stores.redis.base import RedisStoreBase
from crcr.stores.roles.lock import LeaderLock


class RedisLock(RedisStoreBase, LeaderLock):
    """A key holding its owner's name, taken, renewed and released by scripts."""

    async def acquire_lock(self, name: str, owner: str, ttl: float) -> bool:
        args: list[str | int] = [owner, ttl_milliseconds(ttl)]
        return bool(await self._run(lua.ACQUIRE_LOCK, [self._keys.lock(name)], args))

    async def release_lock(self, name: str, owner: str) -> None:
        await self._run(lua.RELEASE_LOCK, [self._keys.lock(name)], [owner])

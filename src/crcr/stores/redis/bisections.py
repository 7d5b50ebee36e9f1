"""The Redis store's bisections (SPEC §14): one hash, key → JSON record, replaced by CAS."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crcr.stores.keys import decode_mapping, encode
from crcr.stores.redis.base import RedisStoreBase
from crcr.stores.redis.errors import unavailable_on_error
from crcr.stores.roles.bisections import Bisections

# KEYS[1] bisections hash. ARGV: key, expected version, new record (JSON text).
# The new text is stored as sent: cjson only reads the version, never re-encodes.
REPLACE_BISECTION = """
local current = redis.call('HGET', KEYS[1], ARGV[1])
if not current then return 0 end
if tonumber(cjson.decode(current)['version']) ~= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
"""


class RedisBisections(RedisStoreBase, Bisections):
    """Bisections in one hash without expiry: the relay removes the old ones."""

    def _hash(self) -> str:
        return self._keys.bisections()

    async def create_bisection(self, key: str, record: Mapping[str, Any]) -> bool:
        with unavailable_on_error():
            created = await self._client.hsetnx(self._hash(), key, encode(dict(record)))
        return bool(created)

    async def replace_bisection(self, key: str, record: Mapping[str, Any], *, version: int) -> bool:
        args: list[str | int] = [key, version, encode(dict(record))]
        return bool(await self._run(REPLACE_BISECTION, [self._hash()], args))

    async def remove_bisection(self, key: str) -> bool:
        with unavailable_on_error():
            removed = await self._client.hdel(self._hash(), key)
        return bool(removed)

    async def bisections(self) -> dict[str, dict[str, Any]]:
        with unavailable_on_error():
            found: dict[str, str] = await self._client.hgetall(self._hash())  # type: ignore[assignment]
        return {key: decode_mapping(text) for key, text in found.items()}

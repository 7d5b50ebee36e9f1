"""The Redis store's governance records (SPEC §10.2): one hash per kind, key → JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crcr.stores.keys import decode_mapping, encode
from crcr.stores.redis.base import RedisStoreBase
from crcr.stores.redis.errors import unavailable_on_error
from crcr.stores.roles.governance import GovernanceRecords


class RedisGovernance(RedisStoreBase, GovernanceRecords):
    """Governance records in one hash per kind, without expiry."""

    async def put_governance(self, kind: str, key: str, record: Mapping[str, Any]) -> None:
        with unavailable_on_error():
            await self._client.hset(self._keys.governance(kind), key, encode(dict(record)))

    async def remove_governance(self, kind: str, key: str) -> bool:
        with unavailable_on_error():
            removed = await self._client.hdel(self._keys.governance(kind), key)
        return bool(removed)

    async def governance(self, kind: str) -> dict[str, dict[str, Any]]:
        with unavailable_on_error():
            found: dict[str, str] = await self._client.hgetall(  # type: ignore[assignment]
                self._keys.governance(kind)
            )
        return {key: decode_mapping(text) for key, text in found.items()}

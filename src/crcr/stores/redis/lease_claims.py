"""The Redis store's claims with a lease: one hash per claim, changed only by scripts."""

from __future__ import annotations

from crcr.stores.keys import ttl_milliseconds
from crcr.stores.redis import scripts as lua
from crcr.stores.redis.base import RedisStoreBase
from crcr.stores.redis.errors import unavailable_on_error
from crcr.stores.roles.lease_claims import LeaseClaims
from crcr.stores.values import LeaseClaim


class RedisLeaseClaims(RedisStoreBase, LeaseClaims):
    """A claim is a hash (`owner`, `until`, `value`) under one key: one Cluster slot."""

    async def claim_lease(
        self, name: str, key: str, owner: str, *, lease: float, ttl: int
    ) -> LeaseClaim:
        lease_us = ttl_milliseconds(lease, name="lease") * 1000
        args: list[str | int] = [owner, lease_us, ttl_milliseconds(ttl)]
        held, value = await self._run(lua.CLAIM_LEASE, [self._keys.lease_claim(name, key)], args)
        return LeaseClaim(held=bool(held), value=str(value) or None)

    async def settle_lease(
        self, name: str, key: str, owner: str, value: str | None, ttl: int
    ) -> str | None:
        if value == "":
            raise ValueError("a settled value must not be empty")
        args: list[str | int] = [owner, value or "", ttl_milliseconds(ttl)]
        settled = await self._run(lua.SETTLE_LEASE, [self._keys.lease_claim(name, key)], args)
        return str(settled) or None

    async def leased_value(self, name: str, key: str) -> str | None:
        with unavailable_on_error():
            value = await self._client.hget(self._keys.lease_claim(name, key), "value")
        return None if value is None else str(value)

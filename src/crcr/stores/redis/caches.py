"""The Redis store's short-lived values: TTL caches, flags and job summaries (SPEC §7)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crcr.stores.keys import decode_mapping, encode, ttl_milliseconds
from crcr.stores.redis import scripts as lua
from crcr.stores.redis.base import RedisStoreBase
from crcr.stores.redis.encoding import as_dict
from crcr.stores.redis.errors import unavailable_on_error
from crcr.stores.roles.caches import Caches, Flags, JobSummaries


class RedisCaches(RedisStoreBase, Caches, Flags, JobSummaries):
    """Caches and flags as keys with a TTL; job summaries in a hash, each expiring alone."""

    # --- TTL caches (allowlist, JWKS, installation tokens, SHA checks) --------
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

    # --- per-(head_sha, repo) flags and job summaries -------------------------
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
        return {job_key: decode_mapping(text) for job_key, text in as_dict(live).items()}

"""The SQLite store's short-lived values: TTL caches, flags and job summaries (SPEC §7)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crcr.stores.keys import compose, decode_mapping, encode, unescape_part
from crcr.stores.roles.caches import Caches, Flags, JobSummaries
from crcr.stores.sqlite.base import SqliteStoreBase, live_value, put_value, ttl_seconds


class SqliteCaches(SqliteStoreBase, Caches, Flags, JobSummaries):
    """Caches, flags and job summaries as rows of `records`, each kind under its own name."""

    # --- TTL caches (allowlist, JWKS, installation tokens, SHA checks) --------
    async def cache_get(self, namespace: str, key: str) -> str | None:
        cache_key = compose(namespace, key)
        return await self._db.read(lambda conn, now: live_value(conn, "cache", cache_key, now))

    async def cache_set(self, namespace: str, key: str, value: str, ttl: float) -> None:
        cache_key, expires_in = compose(namespace, key), ttl_seconds(ttl)
        await self._db.write(
            lambda conn, now: put_value(conn, "cache", cache_key, value, now + expires_in)
        )

    async def cache_delete(self, namespace: str, key: str) -> None:
        cache_key = compose(namespace, key)
        await self._db.write(
            lambda conn, now: conn.execute(
                "DELETE FROM records WHERE kind = 'cache' AND key = ?", (cache_key,)
            )
        )

    # --- per-(head_sha, repo) flags and job summaries -------------------------
    async def set_flag(self, name: str, head_sha: str, repo: str, ttl: int) -> None:
        key, expires_in = compose(name, head_sha, repo), ttl_seconds(ttl)
        await self._db.write(lambda conn, now: put_value(conn, "flag", key, "1", now + expires_in))

    async def has_flag(self, name: str, head_sha: str, repo: str) -> bool:
        key = compose(name, head_sha, repo)
        return await self._db.read(lambda conn, now: live_value(conn, "flag", key, now)) is not None

    async def put_job_summary(
        self, head_sha: str, repo: str, job_key: str, summary: Mapping[str, Any], ttl: int
    ) -> None:
        key, value, expires_in = (
            compose(head_sha, repo, job_key),
            encode(dict(summary)),
            ttl_seconds(ttl),
        )
        await self._db.write(
            lambda conn, now: put_value(conn, "summary", key, value, now + expires_in)
        )

    async def job_summaries(self, head_sha: str, repo: str) -> dict[str, dict[str, Any]]:
        # Components are escaped, so every key of this (sha, repo) lies between
        # "<sha>:<repo>:" and "<sha>:<repo>;" (";" sorts right after ":").
        group = compose(head_sha, repo)
        rows = await self._db.read(
            lambda conn, now: conn.execute(
                "SELECT key, value FROM records WHERE kind = 'summary'"
                " AND key > ? AND key < ? AND expires_at > ?",
                (group + ":", group + ";", now),
            ).fetchall()
        )
        prefix = len(group) + 1
        return {unescape_part(key[prefix:]): decode_mapping(value) for key, value in rows}

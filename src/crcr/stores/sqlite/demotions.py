"""The SQLite store's temporary demotions (SPEC §10.1): rows of `records` that never expire."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from crcr.stores.keys import decode_mapping, encode, merged
from crcr.stores.roles.demotions import Demotions
from crcr.stores.sqlite.base import SqliteStoreBase, live_value, put_value

KIND = "demotion"
NEVER = 1e300
"""A demotion ends when the relay ends it, not after a TTL."""


class SqliteDemotions(SqliteStoreBase, Demotions):
    """Demotions keyed by the lower-cased repo, each a JSON record."""

    async def add_demotion(self, repo: str, record: Mapping[str, Any]) -> bool:
        key, value = repo.lower(), encode(dict(record))

        def add(conn: sqlite3.Connection, now: float) -> bool:
            if live_value(conn, KIND, key, now) is not None:
                return False
            put_value(conn, KIND, key, value, NEVER)
            return True

        return await self._db.write(add)

    async def update_demotion(self, repo: str, changes: Mapping[str, Any]) -> bool:
        key = repo.lower()

        def update(conn: sqlite3.Connection, now: float) -> bool:
            current = live_value(conn, KIND, key, now)
            if current is None:
                return False
            put_value(conn, KIND, key, encode(merged(decode_mapping(current), changes)), NEVER)
            return True

        return await self._db.write(update)

    async def remove_demotion(self, repo: str) -> bool:
        key = repo.lower()
        return await self._db.write(
            lambda conn, now: (
                conn.execute("DELETE FROM records WHERE kind = ? AND key = ?", (KIND, key)).rowcount
                > 0
            )
        )

    async def demotions(self) -> dict[str, dict[str, Any]]:
        rows = await self._db.read(
            lambda conn, now: conn.execute(
                "SELECT key, value FROM records WHERE kind = ? AND expires_at > ?", (KIND, now)
            ).fetchall()
        )
        return {str(key): decode_mapping(value) for key, value in rows}

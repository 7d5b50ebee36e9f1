"""The SQLite store's leader lock, so that one sweeper runs across relay processes."""

from __future__ import annotations

import sqlite3

from crcr.stores.roles.lock import LeaderLock
from crcr.stores.sqlite.base import SqliteStoreBase, live_value, put_value, ttl_seconds


class SqliteLock(SqliteStoreBase, LeaderLock):
    """A row of `records` holding its owner's name until it expires or is released."""

    async def acquire_lock(self, name: str, owner: str, ttl: float) -> bool:
        expires_in = ttl_seconds(ttl)

        def take(conn: sqlite3.Connection, now: float) -> bool:
            holder = live_value(conn, "lock", name, now)
            if holder is not None and holder != owner:
                return False
            put_value(conn, "lock", name, owner, now + expires_in)
            return True

        return await self._db.write(take)

    async def release_lock(self, name: str, owner: str) -> None:
        await self._db.write(
            lambda conn, now: conn.execute(
                "DELETE FROM records WHERE kind = 'lock' AND key = ? AND value = ?",
                (name, owner),
            )
        )

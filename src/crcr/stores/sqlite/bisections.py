"""The SQLite store's bisections (SPEC §14): rows of `records`, replaced by CAS in one write."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from crcr.stores.keys import decode_mapping, encode
from crcr.stores.roles.bisections import Bisections
from crcr.stores.sqlite.base import SqliteStoreBase, live_value, put_value

KIND = "bisection"
NEVER = 1e300
"""A bisection lasts until the relay removes it, not for a TTL."""


class SqliteBisections(SqliteStoreBase, Bisections):
    """Bisections keyed by range, each a JSON record with its `version`."""

    async def create_bisection(self, key: str, record: Mapping[str, Any]) -> bool:
        value = encode(dict(record))

        def create(conn: sqlite3.Connection, now: float) -> bool:
            if live_value(conn, KIND, key, now) is not None:
                return False
            put_value(conn, KIND, key, value, NEVER)
            return True

        return await self._db.write(create)

    async def replace_bisection(self, key: str, record: Mapping[str, Any], *, version: int) -> bool:
        value = encode(dict(record))

        def replace(conn: sqlite3.Connection, now: float) -> bool:
            current = live_value(conn, KIND, key, now)
            if current is None or decode_mapping(current).get("version") != version:
                return False
            put_value(conn, KIND, key, value, NEVER)
            return True

        return await self._db.write(replace)

    async def remove_bisection(self, key: str) -> bool:
        return await self._db.write(
            lambda conn, now: (
                conn.execute("DELETE FROM records WHERE kind = ? AND key = ?", (KIND, key)).rowcount
                > 0
            )
        )

    async def bisections(self) -> dict[str, dict[str, Any]]:
        rows = await self._db.read(
            lambda conn, now: conn.execute(
                "SELECT key, value FROM records WHERE kind = ? AND expires_at > ?", (KIND, now)
            ).fetchall()
        )
        return {str(key): decode_mapping(value) for key, value in rows}

"""What every part of the SQLite store stands on: its database and the `records` table."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Self

from crcr.stores.keys import encode, ttl_milliseconds
from crcr.stores.roles.lifecycle import Lifecycle
from crcr.stores.sqlite.db import SqliteDatabase

_UPSERT = """
INSERT INTO records (kind, key, value, expires_at) VALUES (?, ?, ?, ?)
ON CONFLICT (kind, key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at
"""


def ttl_seconds(ttl: float) -> float:
    """A TTL in seconds, refused and rounded as `ttl_milliseconds` does for Redis."""
    return ttl_milliseconds(ttl) / 1000


def live_value(conn: sqlite3.Connection, kind: str, key: str, now: float) -> str | None:
    """The value of the record (`kind`, `key`), or None when absent or expired."""
    row = conn.execute(
        "SELECT value FROM records WHERE kind = ? AND key = ? AND expires_at > ?",
        (kind, key, now),
    ).fetchone()
    return None if row is None else str(row[0])


def live_values(
    conn: sqlite3.Connection, kind: str, keys: Sequence[str], now: float
) -> dict[str, str]:
    """The values of those of the records (`kind`, key) that exist and have not expired,
    by key, in one query whatever their number (a fan-out's hundreds of records)."""
    rows = conn.execute(
        "SELECT key, value FROM records WHERE kind = ? AND expires_at > ?"
        " AND key IN (SELECT value FROM json_each(?))",
        (kind, now, encode(list(keys))),
    )
    return dict(rows)


def put_value(conn: sqlite3.Connection, kind: str, key: str, value: str, expires_at: float) -> None:
    """Create or replace the record (`kind`, `key`)."""
    conn.execute(_UPSERT, (kind, key, value, expires_at))


def put_values(
    conn: sqlite3.Connection, kind: str, values: Mapping[str, str], expires_at: float
) -> None:
    """Create or replace many records of one kind, all expiring at `expires_at`."""
    conn.executemany(_UPSERT, [(kind, key, value, expires_at) for key, value in values.items()])


class SqliteStoreBase(Lifecycle):
    """The database that the SQLite store's parts share."""

    def __init__(self, database: SqliteDatabase) -> None:
        self._db = database

    @classmethod
    async def open(cls, path: Path, *, busy_timeout: float = 5.0) -> Self:
        """Open (creating if needed) the store at `path`; its directory must exist."""
        database = SqliteDatabase(path, busy_timeout=busy_timeout)
        try:
            await database.open()
        except BaseException:
            await database.close()
            raise
        return cls(database)

    # --- health and lifecycle -------------------------------------------------
    async def ping(self) -> None:
        await self._db.read(lambda conn, now: conn.execute("SELECT 1").fetchone())

    async def close(self) -> None:
        await self._db.close()

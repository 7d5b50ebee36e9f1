"""The SQLite store's idempotency claims and dispatch records (SPEC §4)."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from crcr.stores.keys import compose, decode_mapping, encode, merged
from crcr.stores.roles.dispatches import Dispatches, Idempotency
from crcr.stores.sqlite.base import (
    SqliteStoreBase,
    live_value,
    live_values,
    put_value,
    put_values,
    ttl_seconds,
)


def _merge_dispatch(
    conn: sqlite3.Connection, key: str, changes: Mapping[str, Any], expires_at: float, now: float
) -> bool:
    current = live_value(conn, "dispatch", key, now)
    if current is None:
        return False
    put_value(conn, "dispatch", key, encode(merged(decode_mapping(current), changes)), expires_at)
    return True


class SqliteDispatches(SqliteStoreBase, Dispatches, Idempotency):
    """Claims and dispatch records as rows of `records`, a record's JSON merged in Python."""

    async def claim_once(self, key: str, ttl: int) -> bool:
        def claim(conn: sqlite3.Connection, now: float) -> bool:
            if live_value(conn, "claim", key, now) is not None:
                return False
            put_value(conn, "claim", key, "1", now + ttl_seconds(ttl))
            return True

        return await self._db.write(claim)

    async def put_dispatch(
        self, delivery_id: str, repo: str, record: Mapping[str, Any], ttl: int
    ) -> bool:
        return repo in await self.put_dispatches(delivery_id, {repo: record}, ttl)

    async def update_dispatch(
        self, delivery_id: str, repo: str, changes: Mapping[str, Any], ttl: int
    ) -> bool:
        key = compose(delivery_id, repo)

        def update(conn: sqlite3.Connection, now: float) -> bool:
            return _merge_dispatch(conn, key, changes, now + ttl_seconds(ttl), now)

        return await self._db.write(update)

    async def put_dispatches(
        self, delivery_id: str, records: Mapping[str, Mapping[str, Any]], ttl: int
    ) -> set[str]:
        keys = {repo: compose(delivery_id, repo) for repo in records}

        def create(conn: sqlite3.Connection, now: float) -> set[str]:
            existing = live_values(conn, "dispatch", list(keys.values()), now)
            created = {repo for repo, key in keys.items() if key not in existing}
            fresh = {keys[repo]: encode(dict(records[repo])) for repo in created}
            put_values(conn, "dispatch", fresh, now + ttl_seconds(ttl))
            return created

        return await self._db.write(create)

    async def update_dispatches(
        self, delivery_id: str, changes: Mapping[str, Mapping[str, Any]], ttl: int
    ) -> None:
        keys = {repo: compose(delivery_id, repo) for repo in changes}

        def update(conn: sqlite3.Connection, now: float) -> None:
            current = live_values(conn, "dispatch", list(keys.values()), now)
            updated = {
                key: encode(merged(decode_mapping(current[key]), changes[repo]))
                for repo, key in keys.items()
                if key in current
            }
            put_values(conn, "dispatch", updated, now + ttl_seconds(ttl))

        await self._db.write(update)

    async def get_dispatch(self, delivery_id: str, repo: str) -> dict[str, Any] | None:
        key = compose(delivery_id, repo)
        value = await self._db.read(lambda conn, now: live_value(conn, "dispatch", key, now))
        return None if value is None else decode_mapping(value)

    async def get_dispatches(
        self, delivery_id: str, repos: Sequence[str]
    ) -> dict[str, dict[str, Any]]:
        keys = {repo: compose(delivery_id, repo) for repo in repos}

        def read(conn: sqlite3.Connection, now: float) -> dict[str, dict[str, Any]]:
            found = live_values(conn, "dispatch", list(keys.values()), now)
            return {repo: decode_mapping(found[key]) for repo, key in keys.items() if key in found}

        return await self._db.read(read) if keys else {}

"""The SQLite store's durable retry queues, whose items are leased to one worker at a time."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Mapping
from typing import Any

from crcr.stores.keys import decode_mapping, encode
from crcr.stores.roles.queues import RetryQueue
from crcr.stores.sqlite.base import SqliteStoreBase
from crcr.stores.values import LeasedItem, QueueStats


class SqliteQueues(SqliteStoreBase, RetryQueue):
    """Each item a row of `queue_items`; a lease pushes its `ready_at` to the lease's end."""

    async def enqueue(
        self, queue: str, item_id: str, payload: Mapping[str, Any], delay: float = 0.0
    ) -> bool:
        def add(conn: sqlite3.Connection, now: float) -> bool:
            cursor = conn.execute(
                "INSERT INTO queue_items (queue, item_id, payload, enqueued_at, ready_at)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (queue, item_id, encode(dict(payload)), now, now + max(0.0, delay)),
            )
            return cursor.rowcount == 1

        return await self._db.write(add)

    async def lease(self, queue: str, *, lease_seconds: float, limit: int = 10) -> list[LeasedItem]:
        def take(conn: sqlite3.Connection, now: float) -> list[LeasedItem]:
            rows = conn.execute(
                "SELECT item_id, payload, attempts, enqueued_at FROM queue_items"
                " WHERE queue = ? AND ready_at <= ? ORDER BY ready_at LIMIT ?",
                (queue, now, max(0, limit)),
            ).fetchall()
            leased = []
            for item_id, payload, attempts, enqueued_at in rows:
                token = uuid.uuid4().hex
                conn.execute(
                    "UPDATE queue_items SET lease_token = ?, ready_at = ?"
                    " WHERE queue = ? AND item_id = ?",
                    (token, now + lease_seconds, queue, item_id),
                )
                leased.append(
                    LeasedItem(item_id, decode_mapping(payload), attempts, enqueued_at, token)
                )
            return leased

        return await self._db.write(take)

    async def ack(self, queue: str, item_id: str, lease_token: str) -> bool:
        def remove(conn: sqlite3.Connection, now: float) -> bool:
            cursor = conn.execute(
                "DELETE FROM queue_items WHERE queue = ? AND item_id = ? AND lease_token = ?",
                (queue, item_id, lease_token),
            )
            return cursor.rowcount == 1

        return await self._db.write(remove)

    async def extend_lease(
        self, queue: str, item_id: str, lease_token: str, *, lease_seconds: float
    ) -> bool:
        def extend(conn: sqlite3.Connection, now: float) -> bool:
            cursor = conn.execute(
                "UPDATE queue_items SET ready_at = ?"
                " WHERE queue = ? AND item_id = ? AND lease_token = ?",
                (now + lease_seconds, queue, item_id, lease_token),
            )
            return cursor.rowcount == 1

        return await self._db.write(extend)

    async def release(
        self,
        queue: str,
        item_id: str,
        lease_token: str,
        *,
        delay: float,
        payload: Mapping[str, Any] | None = None,
    ) -> bool:
        replacement = None if payload is None else encode(dict(payload))

        def give_back(conn: sqlite3.Connection, now: float) -> bool:
            cursor = conn.execute(
                "UPDATE queue_items SET attempts = attempts + 1, lease_token = NULL,"
                " payload = COALESCE(?, payload), ready_at = ?"
                " WHERE queue = ? AND item_id = ? AND lease_token = ?",
                (replacement, now + max(0.0, delay), queue, item_id, lease_token),
            )
            return cursor.rowcount == 1

        return await self._db.write(give_back)

    async def wake_retries(self, queue: str) -> int:
        def wake(conn: sqlite3.Connection, now: float) -> int:
            cursor = conn.execute(
                "UPDATE queue_items SET ready_at = ? WHERE queue = ? AND lease_token IS NULL"
                " AND attempts > 0 AND ready_at > ?",
                (now, queue, now),
            )
            return cursor.rowcount

        return await self._db.write(wake)

    async def queue_stats(self, queue: str) -> QueueStats:
        def stats(conn: sqlite3.Connection, now: float) -> QueueStats:
            depth, oldest = conn.execute(
                "SELECT COUNT(*), MIN(enqueued_at) FROM queue_items WHERE queue = ?", (queue,)
            ).fetchone()
            age = 0.0 if oldest is None else max(0.0, now - oldest)
            return QueueStats(depth=depth, oldest_age_seconds=age)

        return await self._db.read(stats)

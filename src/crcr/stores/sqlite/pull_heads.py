"""The SQLite store's pull heads: one JSON row per pull request, swapped in one transaction
with its recovery deadline."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from crcr.stores.pull_head_order import move_heads, settle, view_of
from crcr.stores.roles.pull_heads import (
    NewHead,
    PullHeads,
    PullHeadsView,
    SupersededHead,
    recovery_key,
)
from crcr.stores.sqlite.base import SqliteStoreBase, live_value, put_value, ttl_seconds
from crcr.stores.sqlite.deadlines import track, untrack

KIND = "pull-heads"


def _state(conn: sqlite3.Connection, pull: str, now: float) -> dict[str, Any]:
    text = live_value(conn, KIND, pull, now)
    state: dict[str, Any] = json.loads(text) if text else {}
    return state


class SqlitePullHeads(SqliteStoreBase, PullHeads):
    """Read, order, swap and write back under the write lock: one step."""

    async def move_pull_heads(
        self,
        pull: str,
        head: NewHead,
        repos: Sequence[str],
        *,
        supersede: bool,
        ttl: int,
        recover_at: float,
    ) -> list[SupersededHead]:
        if not repos:
            return []
        expires_in = ttl_seconds(ttl)

        def swap(conn: sqlite3.Connection, now: float) -> list[SupersededHead]:
            state = _state(conn, pull, now)
            superseded = move_heads(state, head, repos, supersede=supersede)
            put_value(conn, KIND, pull, json.dumps(state), now + expires_in)
            if superseded:
                track(conn, recovery_key(pull), recover_at)
            return superseded

        return await self._db.write(swap)

    async def pull_heads(self, pull: str) -> PullHeadsView:
        return view_of(await self._db.read(lambda conn, now: _state(conn, pull, now)))

    async def settle_pull_heads(self, pull: str, done: Sequence[SupersededHead]) -> None:
        def forget(conn: sqlite3.Connection, now: float) -> None:
            row = conn.execute(
                "SELECT value, expires_at FROM records"
                " WHERE kind = ? AND key = ? AND expires_at > ?",
                (KIND, pull, now),
            ).fetchone()
            left = False
            if row is not None:
                state = json.loads(row[0])
                left = settle(state, done)
                put_value(conn, KIND, pull, json.dumps(state), float(row[1]))
            if not left:
                untrack(conn, recovery_key(pull))

        await self._db.write(forget)

"""The SQLite store's pull heads: one JSON row per pull request, swapped in one transaction."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence

from crcr.stores.roles.pull_heads import PullHeads
from crcr.stores.sqlite.base import SqliteStoreBase, live_value, put_value, ttl_seconds

KIND = "pull-heads"


class SqlitePullHeads(SqliteStoreBase, PullHeads):
    """Read, swap and write back under the write lock: one step."""

    async def move_pull_heads(
        self,
        pull: str,
        head: Mapping[str, str],
        repos: Sequence[str],
        *,
        supersede: bool,
        ttl: int,
    ) -> dict[str, dict[str, str]]:
        if not repos:
            return {}
        new, expires_in = dict(head), ttl_seconds(ttl)

        def swap(conn: sqlite3.Connection, now: float) -> dict[str, dict[str, str]]:
            text = live_value(conn, KIND, pull, now)
            heads: dict[str, dict[str, str]] = json.loads(text) if text else {}
            replaced = {}
            for repo in repos:
                old = heads.get(repo)
                if (
                    supersede
                    and old is not None
                    and old.get("delivery_id") != new.get("delivery_id")
                    and old.get("head_sha") != new.get("head_sha")
                ):
                    replaced[repo] = old
                heads[repo] = new
            put_value(conn, KIND, pull, json.dumps(heads), now + expires_in)
            return replaced

        return await self._db.write(swap)

"""The SQLite store's allowlist stamp and audit trail (SPEC §12).

The stamp is a row of `records` that never expires; the trail is the `audit` table,
trimmed by age and per-bucket count in the transaction that appends to it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from crcr.stores.keys import decode_mapping, encode
from crcr.stores.roles.audit import AllowlistStamp, AuditLog
from crcr.stores.sqlite.base import SqliteStoreBase, live_value, put_value
from crcr.stores.sqlite.db import SqliteDatabase
from crcr.stores.sqlite.demotions import NEVER

STAMP_KIND = "stamp"
ALLOWLIST_STAMP = "allowlist"

_TRIM_BUCKET = """
DELETE FROM audit WHERE bucket = ? AND seq <= (
    SELECT seq FROM audit WHERE bucket = ? ORDER BY at DESC, seq DESC LIMIT 1 OFFSET ?
)
"""


class SqliteAudit(SqliteStoreBase, AllowlistStamp, AuditLog):
    """The stamp as a counter in `records`; audit entries as JSON rows of `audit`."""

    def __init__(self, database: SqliteDatabase) -> None:
        super().__init__(database)
        self._audit_appends: dict[str, int] = {}

    async def allowlist_stamp(self) -> int:
        value = await self._db.read(
            lambda conn, now: live_value(conn, STAMP_KIND, ALLOWLIST_STAMP, now)
        )
        return int(value or 0)

    async def move_allowlist_stamp(self) -> int:
        def move(conn: sqlite3.Connection, now: float) -> int:
            moved = int(live_value(conn, STAMP_KIND, ALLOWLIST_STAMP, now) or 0) + 1
            put_value(conn, STAMP_KIND, ALLOWLIST_STAMP, str(moved), NEVER)
            return moved

        return await self._db.write(move)

    async def append_audit(
        self, entries: Sequence[Mapping[str, Any]], *, keep_seconds: float, keep_per_repo: int
    ) -> None:
        if not entries:
            return
        rows = []
        for entry in entries:
            bucket = str(entry["bucket"]).lower()
            rows.append((bucket, float(entry["at"]), encode({**entry, "bucket": bucket})))
        cutoff = max(at for _, at, _ in rows) - keep_seconds
        due = self._trims_due([bucket for bucket, _, _ in rows], keep_per_repo)

        def append(conn: sqlite3.Connection, now: float) -> None:
            conn.executemany("INSERT INTO audit (bucket, at, entry) VALUES (?, ?, ?)", rows)
            conn.execute("DELETE FROM audit WHERE at < ?", (cutoff,))
            for bucket in due:
                conn.execute(_TRIM_BUCKET, (bucket, bucket, keep_per_repo))

        await self._db.write(append)

    def _trims_due(self, buckets: list[str], keep_per_repo: int) -> set[str]:
        """The buckets to trim to `keep_per_repo` now.

        A trim walks the bucket's index up to `keep_per_repo` rows, so a bucket is
        trimmed once its appends here reach 1 % of the bound (at least every append for
        bounds under 100): it holds at most 1 % more per instance between trims.
        """
        slack = keep_per_repo // 100
        counts = self._audit_appends
        due = set()
        for bucket in buckets:
            counts[bucket] = counts.get(bucket, 0) + 1
            if counts[bucket] > slack:
                counts[bucket] = 0
                due.add(bucket)
        return due

    async def audit_entries(
        self, bucket: str | None = None, *, since: float = 0.0, limit: int = 1000
    ) -> list[dict[str, Any]]:
        if bucket is None:
            sql = "SELECT entry FROM audit WHERE at >= ? ORDER BY at DESC, seq DESC LIMIT ?"
            params: tuple[Any, ...] = (since, limit)
        else:
            sql = (
                "SELECT entry FROM audit WHERE bucket = ? AND at >= ?"
                " ORDER BY at DESC, seq DESC LIMIT ?"
            )
            params = (bucket.lower(), since, limit)
        rows = await self._db.read(lambda conn, now: conn.execute(sql, params).fetchall())
        return [decode_mapping(entry) for (entry,) in rows]

"""The SQLite store's in-progress tracker: the `deadlines` table, one row a job (SPEC §7)."""

from __future__ import annotations

import sqlite3

from crcr.stores.roles.deadlines import Deadlines
from crcr.stores.sqlite.base import SqliteStoreBase


def track(conn: sqlite3.Connection, job_key: str, deadline: float) -> None:
    """Set the job's deadline to exactly `deadline`, tracked already or not."""
    conn.execute(
        "INSERT INTO deadlines (job_key, deadline) VALUES (?, ?)"
        " ON CONFLICT (job_key) DO UPDATE SET deadline = excluded.deadline",
        (job_key, deadline),
    )


def untrack(conn: sqlite3.Connection, job_key: str) -> None:
    """Forget the job's deadline."""
    conn.execute("DELETE FROM deadlines WHERE job_key = ?", (job_key,))


class SqliteDeadlines(SqliteStoreBase, Deadlines):
    """Deadlines of unfinished jobs, so that the sweeper finds the overdue ones."""

    async def track_deadline(self, job_key: str, deadline: float) -> None:
        await self._db.write(lambda conn, now: track(conn, job_key, deadline))

    async def untrack_deadline(self, job_key: str, *, wait: bool = True) -> None:
        # Always waited for: a local write, with no round trip to share.
        await self._db.write(lambda conn, now: untrack(conn, job_key))

    async def overdue(self, now: float, limit: int = 100) -> list[str]:
        rows = await self._db.read(
            lambda conn, _: conn.execute(
                "SELECT job_key FROM deadlines WHERE deadline <= ? ORDER BY deadline LIMIT ?",
                (now, max(0, limit)),
            ).fetchall()
        )
        return [str(job_key) for (job_key,) in rows]

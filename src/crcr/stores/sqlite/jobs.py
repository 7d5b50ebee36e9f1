"""The SQLite store's job state machine: compare-and-set in one transaction (SPEC §5)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection
from dataclasses import replace

from crcr.stores.keys import decode_mapping, encode, merged
from crcr.stores.roles.jobs import JobStates
from crcr.stores.sqlite.base import SqliteStoreBase, live_value, put_value, ttl_seconds
from crcr.stores.sqlite.deadlines import track, untrack
from crcr.stores.sqlite.lease_claims import settled_value
from crcr.stores.sqlite.rate_limit import rate_hit
from crcr.stores.values import ClaimRef, JobCount, JobRecord, Transition


def _job(value: str | None) -> JobRecord | None:
    if value is None:
        return None
    stored = decode_mapping(value)
    return JobRecord(state=stored["state"], data=stored["data"])


def _transition(
    job_key: str, allowed_from: Collection[str | None], new: JobRecord, ttl: int
) -> Callable[[sqlite3.Connection, float], Transition]:
    """The compare-and-set of `transition_job`, as a write for `SqliteDatabase`."""
    expires_in = ttl_seconds(ttl)

    def transition(conn: sqlite3.Connection, now: float) -> Transition:
        previous = _job(live_value(conn, "job", job_key, now))
        if (previous.state if previous else None) not in allowed_from:
            return Transition(applied=False, previous=previous)
        data = merged(previous.data if previous else {}, new.data)
        stored = encode({"state": new.state, "data": data})
        put_value(conn, "job", job_key, stored, now + expires_in)
        return Transition(applied=True, previous=previous)

    return transition


LISTED = "listed-job"
"""The records kind of `listed_under`'s entries: one row per (list, job), keyed so that
a list's rows are one range of the primary key."""


def _listed(name: str, job_key: str) -> str:
    return f"{name}\x00{job_key}"


class SqliteJobs(SqliteStoreBase, JobStates):
    """Job records as rows of `records`; a transition moves the deadline in its transaction."""

    async def transition_job(
        self,
        job_key: str,
        *,
        allowed_from: Collection[str | None],
        new: JobRecord,
        ttl: int,
    ) -> Transition:
        return await self._db.write(_transition(job_key, allowed_from, new, ttl))

    async def transition_job_and_deadline(
        self,
        job_key: str,
        *,
        allowed_from: Collection[str | None],
        new: JobRecord,
        ttl: int,
        deadline: float | None,
        count: JobCount | None = None,
        listed_under: str | None = None,
        read_claim: ClaimRef | None = None,
    ) -> Transition:
        transition = _transition(job_key, allowed_from, new, ttl)
        listed_for = ttl_seconds(ttl)
        hit = None if count is None else rate_hit(count.key, count.limit, count.window_seconds)

        def with_deadline(conn: sqlite3.Connection, now: float) -> Transition:
            if listed_under is not None:
                put_value(conn, LISTED, _listed(listed_under, job_key), "", now + listed_for)
            outcome = moved(conn, now)
            if read_claim is None:
                return outcome
            value = settled_value(conn, read_claim.name, read_claim.key, now)
            return replace(outcome, claim_value=value)

        def moved(conn: sqlite3.Connection, now: float) -> Transition:
            if hit is not None and not hit(conn, now).allowed:
                return Transition(applied=False, previous=None, counted=False)
            outcome = transition(conn, now)
            if outcome.applied and deadline is None:
                untrack(conn, job_key)
            elif outcome.applied:
                conn.execute(
                    "INSERT INTO deadlines (job_key, deadline) VALUES (?, ?) ON CONFLICT"
                    " (job_key) DO UPDATE SET deadline = MIN(deadline, excluded.deadline)",
                    (job_key, deadline),
                )
            return outcome

        return await self._db.write(with_deadline)

    async def restore_job(
        self,
        job_key: str,
        *,
        expected_state: str,
        previous: JobRecord | None,
        ttl: int,
        deadline: float | None,
    ) -> bool:
        expires_in = ttl_seconds(ttl)
        restored = None
        if previous is not None:
            restored = encode({"state": previous.state, "data": dict(previous.data)})

        def restore(conn: sqlite3.Connection, now: float) -> bool:
            current = _job(live_value(conn, "job", job_key, now))
            if current is None or current.state != expected_state:
                return False
            if restored is None:
                conn.execute("DELETE FROM records WHERE kind = 'job' AND key = ?", (job_key,))
            else:
                put_value(conn, "job", job_key, restored, now + expires_in)
            if deadline is None:
                untrack(conn, job_key)
            else:
                track(conn, job_key, deadline)
            return True

        return await self._db.write(restore)

    async def get_job(self, job_key: str) -> JobRecord | None:
        return _job(await self._db.read(lambda conn, now: live_value(conn, "job", job_key, now)))

    async def listed_jobs(self, name: str) -> list[str]:
        start, end = f"{name}\x00", f"{name}\x01"
        rows = await self._db.read(
            lambda conn, now: conn.execute(
                "SELECT key FROM records"
                " WHERE kind = ? AND key >= ? AND key < ? AND expires_at > ?",
                (LISTED, start, end, now),
            ).fetchall()
        )
        return [str(key)[len(start) :] for (key,) in rows]

"""The embedded SQLite state store: one file, shared safely by worker processes."""

from __future__ import annotations

import math
import sqlite3
import uuid
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

from crcr.stores.keys import (
    compose,
    decode_mapping,
    encode,
    merged,
    ttl_milliseconds,
    unescape_part,
)
from crcr.stores.sqlite_db import SqliteDatabase
from crcr.stores.state import JobRecord, LeasedItem, QueueStats, RateDecision, Transition

_UPSERT = """
INSERT INTO records (kind, key, value, expires_at) VALUES (?, ?, ?, ?)
ON CONFLICT (kind, key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at
"""


def _seconds(ttl: float) -> float:
    return ttl_milliseconds(ttl) / 1000


def _merge_dispatch(
    conn: sqlite3.Connection, key: str, changes: Mapping[str, Any], expires_at: float, now: float
) -> bool:
    current = _live(conn, "dispatch", key, now)
    if current is None:
        return False
    _put(conn, "dispatch", key, encode(merged(decode_mapping(current), changes)), expires_at)
    return True


def _live(conn: sqlite3.Connection, kind: str, key: str, now: float) -> str | None:
    row = conn.execute(
        "SELECT value FROM records WHERE kind = ? AND key = ? AND expires_at > ?",
        (kind, key, now),
    ).fetchone()
    return None if row is None else str(row[0])


def _put(conn: sqlite3.Connection, kind: str, key: str, value: str, expires_at: float) -> None:
    conn.execute(_UPSERT, (kind, key, value, expires_at))


def _job(value: str | None) -> JobRecord | None:
    if value is None:
        return None
    stored = decode_mapping(value)
    return JobRecord(state=stored["state"], data=stored["data"])


def _track(conn: sqlite3.Connection, job_key: str, deadline: float) -> None:
    """Set the job's deadline to exactly `deadline`, tracked already or not."""
    conn.execute(
        "INSERT INTO deadlines (job_key, deadline) VALUES (?, ?)"
        " ON CONFLICT (job_key) DO UPDATE SET deadline = excluded.deadline",
        (job_key, deadline),
    )


def _untrack(conn: sqlite3.Connection, job_key: str) -> None:
    conn.execute("DELETE FROM deadlines WHERE job_key = ?", (job_key,))


def _transition(
    job_key: str, allowed_from: Collection[str | None], new: JobRecord, ttl: int
) -> Callable[[sqlite3.Connection, float], Transition]:
    """The compare-and-set of `transition_job`, as a write for `SqliteDb`."""
    expires_in = _seconds(ttl)

    def transition(conn: sqlite3.Connection, now: float) -> Transition:
        previous = _job(_live(conn, "job", job_key, now))
        if (previous.state if previous else None) not in allowed_from:
            return Transition(applied=False, previous=previous)
        data = merged(previous.data if previous else {}, new.data)
        stored = encode({"state": new.state, "data": data})
        _put(conn, "job", job_key, stored, now + expires_in)
        return Transition(applied=True, previous=previous)

    return transition


class SqliteStateStore:
    """`StateStore` in a SQLite file; expired rows read as absent and are purged later."""

    def __init__(self, database: SqliteDatabase) -> None:
        self._db = database

    @classmethod
    async def open(cls, path: Path, *, busy_timeout: float = 5.0) -> SqliteStateStore:
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

    # --- idempotency and dispatch records -------------------------------------
    async def claim_once(self, key: str, ttl: int) -> bool:
        def claim(conn: sqlite3.Connection, now: float) -> bool:
            if _live(conn, "claim", key, now) is not None:
                return False
            _put(conn, "claim", key, "1", now + _seconds(ttl))
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
            return _merge_dispatch(conn, key, changes, now + _seconds(ttl), now)

        return await self._db.write(update)

    async def put_dispatches(
        self, delivery_id: str, records: Mapping[str, Mapping[str, Any]], ttl: int
    ) -> set[str]:
        def create(conn: sqlite3.Connection, now: float) -> set[str]:
            created = set()
            for repo, record in records.items():
                key = compose(delivery_id, repo)
                if _live(conn, "dispatch", key, now) is None:
                    _put(conn, "dispatch", key, encode(dict(record)), now + _seconds(ttl))
                    created.add(repo)
            return created

        return await self._db.write(create)

    async def update_dispatches(
        self, delivery_id: str, changes: Mapping[str, Mapping[str, Any]], ttl: int
    ) -> None:
        def update(conn: sqlite3.Connection, now: float) -> None:
            for repo, change in changes.items():
                key = compose(delivery_id, repo)
                _merge_dispatch(conn, key, change, now + _seconds(ttl), now)

        await self._db.write(update)

    async def get_dispatch(self, delivery_id: str, repo: str) -> dict[str, Any] | None:
        key = compose(delivery_id, repo)
        value = await self._db.read(lambda conn, now: _live(conn, "dispatch", key, now))
        return None if value is None else decode_mapping(value)

    # --- job state machine ----------------------------------------------------
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
    ) -> Transition:
        transition = _transition(job_key, allowed_from, new, ttl)

        def with_deadline(conn: sqlite3.Connection, now: float) -> Transition:
            outcome = transition(conn, now)
            if outcome.applied and deadline is None:
                _untrack(conn, job_key)
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
        expires_in = _seconds(ttl)
        restored = None
        if previous is not None:
            restored = encode({"state": previous.state, "data": dict(previous.data)})

        def restore(conn: sqlite3.Connection, now: float) -> bool:
            current = _job(_live(conn, "job", job_key, now))
            if current is None or current.state != expected_state:
                return False
            if restored is None:
                conn.execute("DELETE FROM records WHERE kind = 'job' AND key = ?", (job_key,))
            else:
                _put(conn, "job", job_key, restored, now + expires_in)
            if deadline is None:
                _untrack(conn, job_key)
            else:
                _track(conn, job_key, deadline)
            return True

        return await self._db.write(restore)

    async def get_job(self, job_key: str) -> JobRecord | None:
        return _job(await self._db.read(lambda conn, now: _live(conn, "job", job_key, now)))

    # --- rate limiting --------------------------------------------------------
    async def hit_rate_limit(self, key: str, limit: int, window_seconds: float) -> RateDecision:
        return await self._db.write(_rate_hit(key, limit, window_seconds))

    async def hit_rate_limit_and_get_dispatch(
        self, key: str, limit: int, window_seconds: float, delivery_id: str, repo: str
    ) -> tuple[RateDecision, dict[str, Any] | None]:
        hit = _rate_hit(key, limit, window_seconds)
        dispatch_key = compose(delivery_id, repo)

        def both(conn: sqlite3.Connection, now: float) -> tuple[RateDecision, str | None]:
            return hit(conn, now), _live(conn, "dispatch", dispatch_key, now)

        decision, value = await self._db.write(both)
        return decision, None if value is None else decode_mapping(value)

    # --- TTL caches -----------------------------------------------------------
    async def cache_get(self, namespace: str, key: str) -> str | None:
        cache_key = compose(namespace, key)
        return await self._db.read(lambda conn, now: _live(conn, "cache", cache_key, now))

    async def cache_set(self, namespace: str, key: str, value: str, ttl: float) -> None:
        cache_key, expires_in = compose(namespace, key), _seconds(ttl)
        await self._db.write(
            lambda conn, now: _put(conn, "cache", cache_key, value, now + expires_in)
        )

    async def cache_delete(self, namespace: str, key: str) -> None:
        cache_key = compose(namespace, key)
        await self._db.write(
            lambda conn, now: conn.execute(
                "DELETE FROM records WHERE kind = 'cache' AND key = ?", (cache_key,)
            )
        )

    # --- durable retry queues with leases -------------------------------------
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

    async def queue_stats(self, queue: str) -> QueueStats:
        def stats(conn: sqlite3.Connection, now: float) -> QueueStats:
            depth, oldest = conn.execute(
                "SELECT COUNT(*), MIN(enqueued_at) FROM queue_items WHERE queue = ?", (queue,)
            ).fetchone()
            age = 0.0 if oldest is None else max(0.0, now - oldest)
            return QueueStats(depth=depth, oldest_age_seconds=age)

        return await self._db.read(stats)

    # --- in-progress tracker --------------------------------------------------
    async def track_deadline(self, job_key: str, deadline: float) -> None:
        await self._db.write(lambda conn, now: _track(conn, job_key, deadline))

    async def untrack_deadline(self, job_key: str, *, wait: bool = True) -> None:
        # Always waited for: a local write, with no round trip to share.
        await self._db.write(lambda conn, now: _untrack(conn, job_key))

    async def overdue(self, now: float, limit: int = 100) -> list[str]:
        rows = await self._db.read(
            lambda conn, _: conn.execute(
                "SELECT job_key FROM deadlines WHERE deadline <= ? ORDER BY deadline LIMIT ?",
                (now, max(0, limit)),
            ).fetchall()
        )
        return [str(job_key) for (job_key,) in rows]

    # --- flags and job summaries ----------------------------------------------
    async def set_flag(self, name: str, head_sha: str, repo: str, ttl: int) -> None:
        key, expires_in = compose(name, head_sha, repo), _seconds(ttl)
        await self._db.write(lambda conn, now: _put(conn, "flag", key, "1", now + expires_in))

    async def has_flag(self, name: str, head_sha: str, repo: str) -> bool:
        key = compose(name, head_sha, repo)
        return await self._db.read(lambda conn, now: _live(conn, "flag", key, now)) is not None

    async def put_job_summary(
        self, head_sha: str, repo: str, job_key: str, summary: Mapping[str, Any], ttl: int
    ) -> None:
        key, value, expires_in = (
            compose(head_sha, repo, job_key),
            encode(dict(summary)),
            _seconds(ttl),
        )
        await self._db.write(lambda conn, now: _put(conn, "summary", key, value, now + expires_in))

    async def job_summaries(self, head_sha: str, repo: str) -> dict[str, dict[str, Any]]:
        # Components are escaped, so every key of this (sha, repo) lies between
        # "<sha>:<repo>:" and "<sha>:<repo>;" (";" sorts right after ":").
        group = compose(head_sha, repo)
        rows = await self._db.read(
            lambda conn, now: conn.execute(
                "SELECT key, value FROM records WHERE kind = 'summary'"
                " AND key > ? AND key < ? AND expires_at > ?",
                (group + ":", group + ";", now),
            ).fetchall()
        )
        prefix = len(group) + 1
        return {unescape_part(key[prefix:]): decode_mapping(value) for key, value in rows}

    # --- leader lock ----------------------------------------------------------
    async def acquire_lock(self, name: str, owner: str, ttl: float) -> bool:
        expires_in = _seconds(ttl)

        def take(conn: sqlite3.Connection, now: float) -> bool:
            holder = _live(conn, "lock", name, now)
            if holder is not None and holder != owner:
                return False
            _put(conn, "lock", name, owner, now + expires_in)
            return True

        return await self._db.write(take)

    async def release_lock(self, name: str, owner: str) -> None:
        await self._db.write(
            lambda conn, now: conn.execute(
                "DELETE FROM records WHERE kind = 'lock' AND key = ? AND value = ?",
                (name, owner),
            )
        )


def _rate_hit(
    key: str, limit: int, window_seconds: float
) -> Callable[[sqlite3.Connection, float], RateDecision]:
    """One sliding-window hit, as work for `SqliteDatabase.write`; refusals are not counted."""
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")

    def hit(conn: sqlite3.Connection, now: float) -> RateDecision:
        conn.execute("DELETE FROM rate_hits WHERE key = ? AND at <= ?", (key, now - window_seconds))
        count, oldest = conn.execute(
            "SELECT COUNT(*), MIN(at) FROM rate_hits WHERE key = ?", (key,)
        ).fetchone()
        if count < limit:
            conn.execute(
                "INSERT INTO rate_hits (key, at, expires_at) VALUES (?, ?, ?)",
                (key, now, now + window_seconds),
            )
            return RateDecision(allowed=True, remaining=limit - count - 1)
        retry_after = max(1, math.ceil(oldest + window_seconds - now))
        return RateDecision(allowed=False, remaining=0, retry_after=retry_after)

    return hit

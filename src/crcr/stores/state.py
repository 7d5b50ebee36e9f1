"""The state store contract: everything the relay keeps between requests.

Two backends implement it (Redis for scale, SQLite embedded) and one contract test
suite runs against both. The store is deliberately dumb: it offers atomic primitives
(compare-and-set, sliding-window counting, leases); the decisions — which transitions
are legal, what a duplicate is — live in the relay's pure core.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


class StateStoreUnavailable(Exception):
    """The backing server or file cannot be reached; callers fail closed (503)."""


@dataclass(frozen=True)
class JobRecord:
    """A job's lifecycle state plus the facts recorded with it (timestamps, conclusion)."""

    state: str
    data: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Transition:
    """Outcome of a compare-and-set on a job: whether it applied, and what was there."""

    applied: bool
    previous: JobRecord | None


@dataclass(frozen=True)
class RateDecision:
    """Outcome of one rate-limit hit; `retry_after` is whole seconds when refused."""

    allowed: bool
    remaining: int
    retry_after: int = 0


@dataclass(frozen=True)
class LeasedItem:
    """A queue item handed to one worker until `lease_token` expires."""

    item_id: str
    payload: Mapping[str, Any]
    attempts: int
    enqueued_at: float
    lease_token: str


@dataclass(frozen=True)
class LeaseClaim:
    """Outcome of `claim_lease`: whether the caller holds the claim, and any value settled.

    `held` and `value` are never both set: once a value is settled, nobody claims again.
    """

    held: bool
    value: str | None = None


@dataclass(frozen=True)
class QueueStats:
    """Depth and age of a retry queue, for `/metrics`."""

    depth: int
    oldest_age_seconds: float


class StateStore(Protocol):
    """Everything the relay keeps between requests (SPEC §4, §5, §7).

    Every record has a TTL (`ttl` seconds) except retry-queue items, which stay until
    acknowledged: a failed delivery must never expire silently, and temporary
    demotions, which last until the relay ends them.
    """

    # --- health and lifecycle -------------------------------------------------
    async def ping(self) -> None:
        """Raise `StateStoreUnavailable` unless the store answers."""

    async def close(self) -> None:
        """Release connections."""

    # --- idempotency and dispatch records (SPEC §4) ---------------------------
    async def claim_once(self, key: str, ttl: int) -> bool:
        """Return True for the first caller to claim `key` within `ttl`, False after."""

    async def put_dispatch(
        self, delivery_id: str, repo: str, record: Mapping[str, Any], ttl: int
    ) -> bool:
        """Create the dispatch record for (delivery_id, repo); False if one exists."""

    async def update_dispatch(
        self, delivery_id: str, repo: str, changes: Mapping[str, Any], ttl: int
    ) -> bool:
        """Merge `changes` into an existing record; False if there is none."""

    async def put_dispatches(
        self, delivery_id: str, records: Mapping[str, Mapping[str, Any]], ttl: int
    ) -> set[str]:
        """`put_dispatch` for many repos in one round trip; returns the repos created.

        A fan-out to hundreds of repos writes its pending records together, so the
        store costs one round trip (Redis) or one transaction (SQLite) per event.
        """

    async def update_dispatches(
        self, delivery_id: str, changes: Mapping[str, Mapping[str, Any]], ttl: int
    ) -> None:
        """`update_dispatch` for many repos in one round trip (missing records are skipped)."""

    async def get_dispatch(self, delivery_id: str, repo: str) -> dict[str, Any] | None:
        """Return the dispatch record, or None."""

    # --- job state machine (SPEC §5 step 7) -----------------------------------
    async def transition_job(
        self,
        job_key: str,
        *,
        allowed_from: Collection[str | None],
        new: JobRecord,
        ttl: int,
    ) -> Transition:
        """Atomically set the job to `new` if its current state is in `allowed_from`.

        `None` in `allowed_from` means "no record yet". `new.data` is merged over the
        existing data. Whether it applied or not, the previous record is returned so
        the caller can tell an exact repeat from a conflict.
        """

    async def transition_job_and_deadline(
        self,
        job_key: str,
        *,
        allowed_from: Collection[str | None],
        new: JobRecord,
        ttl: int,
        deadline: float | None,
    ) -> Transition:
        """`transition_job`, then, if it applied, track `deadline` (None: untrack).

        A job tracked already keeps the earlier of its two deadlines. One round trip
        where the store allows it (a callback needs both). A transition that does not
        apply changes no deadline, except that a store may track a job found in the new
        state (an identical transition applied concurrently).
        """

    async def restore_job(
        self,
        job_key: str,
        *,
        expected_state: str,
        previous: JobRecord | None,
        ttl: int,
        deadline: float | None,
    ) -> bool:
        """Undo a transition whose effects were refused downstream of it.

        Atomically: if the job's current state is `expected_state`, put `previous` back
        whole (its data replaces the current data entirely, no merge; `None` removes the
        job record) and set the job's deadline to exactly `deadline` (`None`: untrack it),
        and return True. Otherwise change nothing and return False (the job moved on).
        """

    async def get_job(self, job_key: str) -> JobRecord | None:
        """Return the job's current record, or None."""

    # --- rate limiting (SPEC §5 step 3) ---------------------------------------
    async def hit_rate_limit(self, key: str, limit: int, window_seconds: float) -> RateDecision:
        """Count one request in a sliding window; refused requests are not counted."""

    async def hit_rate_limit_and_get_dispatch(
        self, key: str, limit: int, window_seconds: float, delivery_id: str, repo: str
    ) -> tuple[RateDecision, dict[str, Any] | None]:
        """`hit_rate_limit` and `get_dispatch` in one round trip (a callback needs both).

        The record is read whatever the decision; nothing but the hit is written.
        """

    # --- TTL caches (allowlist, JWKS, installation tokens, SHA checks) --------
    async def cache_get(self, namespace: str, key: str) -> str | None:
        """Return a cached value, or None when absent or expired."""

    async def cache_set(self, namespace: str, key: str, value: str, ttl: float) -> None:
        """Cache `value` for `ttl` seconds."""

    async def cache_delete(self, namespace: str, key: str) -> None:
        """Forget a cached value."""

    # --- durable retry queues with leases -------------------------------------
    async def enqueue(
        self, queue: str, item_id: str, payload: Mapping[str, Any], delay: float = 0.0
    ) -> bool:
        """Add an item, ready after `delay` seconds; False if `item_id` is queued already."""

    async def lease(self, queue: str, *, lease_seconds: float, limit: int = 10) -> list[LeasedItem]:
        """Hand out up to `limit` ready items; no one else gets them until the lease ends."""

    async def ack(self, queue: str, item_id: str, lease_token: str) -> bool:
        """Remove a leased item for good; False if the lease was lost to another worker."""

    async def release(
        self,
        queue: str,
        item_id: str,
        lease_token: str,
        *,
        delay: float,
        payload: Mapping[str, Any] | None = None,
    ) -> bool:
        """Give a leased item back, ready again after `delay`, its attempts counted."""

    async def extend_lease(
        self, queue: str, item_id: str, lease_token: str, *, lease_seconds: float
    ) -> bool:
        """Make a held lease end `lease_seconds` from now; False if it was lost.

        A worker renews the leases of items it is still handling, so that leases can be
        short: an item whose worker died is handed out again within one lease.
        """

    async def wake_retries(self, queue: str) -> int:
        """Make every retried item waiting out its backoff ready now; how many there were.

        For a queue whose far end has just come back: an item that failed during the
        outage would otherwise wait out its own backoff (up to a minute) after everything
        else was sent. Leased items, and fresh items enqueued with a delay on purpose
        (never attempted), keep their time.
        """

    async def queue_stats(self, queue: str) -> QueueStats:
        """Depth (ready, delayed and leased items) and the age of the oldest item."""

    # --- in-progress tracker, ordered by deadline (zombies, SPEC §7) ----------
    async def track_deadline(self, job_key: str, deadline: float) -> None:
        """Remember that `job_key` must finish by `deadline` (epoch seconds)."""

    async def untrack_deadline(self, job_key: str, *, wait: bool = True) -> None:
        """Forget the deadline of a finished job.

        `wait=False`: the store may do it after returning and drop it should that fail,
        for a caller to whom a job left tracked only costs a harmless sweeper visit. A
        later `overdue` of the same store object still sees it done.
        """

    async def overdue(self, now: float, limit: int = 100) -> list[str]:
        """Job keys whose deadline is at or before `now`, earliest first."""

    # --- per-(head_sha, repo) flags and job summaries (SPEC §7) ---------------
    async def set_flag(self, name: str, head_sha: str, repo: str, ttl: int) -> None:
        """Raise a flag such as "check runs wanted" for (head_sha, repo)."""

    async def has_flag(self, name: str, head_sha: str, repo: str) -> bool:
        """Whether the flag is raised."""

    async def put_job_summary(
        self, head_sha: str, repo: str, job_key: str, summary: Mapping[str, Any], ttl: int
    ) -> None:
        """Record (replace) what a job last reported, for backfilling check runs."""

    async def job_summaries(self, head_sha: str, repo: str) -> dict[str, dict[str, Any]]:
        """Every job summary for (head_sha, repo), by job key."""

    # --- temporary demotions (SPEC §10.1) -------------------------------------
    async def add_demotion(self, repo: str, record: Mapping[str, Any]) -> bool:
        """Record that `repo` is demoted; False (nothing changed) if it already is.

        Created once, so that its `since` stays the moment the demotion began however
        many instances or passes see the same verdict.
        """

    async def update_demotion(self, repo: str, changes: Mapping[str, Any]) -> bool:
        """Merge `changes` (e.g. the pull request's URL) into a demotion; False if none."""

    async def remove_demotion(self, repo: str) -> bool:
        """End a demotion; False if `repo` was not demoted."""

    async def demotions(self) -> dict[str, dict[str, Any]]:
        """Every current demotion by repo (lower-cased), without expiry: they end explicitly."""

    # --- claims with a lease: do a thing once, across workers (SPEC §7 oncall) --
    async def claim_lease(
        self, name: str, key: str, owner: str, *, lease: float, ttl: int
    ) -> LeaseClaim:
        """Claim the right to do (name, key) once, e.g. post a PR comment, atomically.

        A value settled already: `LeaseClaim(False, value)`, nothing changes. No holder,
        an expired lease, or `owner`'s own: `owner` holds it for `lease` seconds,
        `LeaseClaim(True)`. Another owner's live lease: `LeaseClaim(False)`. The record
        lives `ttl` seconds; a holder that dies is replaced when its lease ends.
        """

    async def settle_lease(
        self, name: str, key: str, owner: str, value: str | None, ttl: int
    ) -> str | None:
        """Record `value` (non-empty) for (name, key) unless one is recorded; return it.

        The first value settled wins and is returned (a holder whose lease ran out can
        tell that another did the thing too). `value=None` gives up `owner`'s hold
        without a value, so the next claim need not wait for the lease to end.
        """

    async def leased_value(self, name: str, key: str) -> str | None:
        """The value settled for (name, key), or None; claims nothing."""

    # --- leader lock (one sweeper across instances) ---------------------------
    async def acquire_lock(self, name: str, owner: str, ttl: float) -> bool:
        """Take or renew the lock if free or already ours; True when we hold it."""

    async def release_lock(self, name: str, owner: str) -> None:
        """Give up the lock if we hold it."""

    # --- allowlist version stamp (SPEC §12, revocation) -----------------------
    async def allowlist_stamp(self) -> int:
        """The version stamp of the allowlist in use: 0 until it is first moved.

        Every instance reads it before its callback decisions (one cheap read, memoised
        for a moment), and re-reads the allowlist when it has moved.
        """

    async def move_allowlist_stamp(self) -> int:
        """Move the stamp on by one, atomically, and return the new value (never expires)."""

    # --- audit trail (SPEC §12) -----------------------------------------------
    async def append_audit(
        self, entries: Sequence[Mapping[str, Any]], *, keep_seconds: float, keep_per_repo: int
    ) -> None:
        """Keep `entries` (JSON objects, each with a `bucket` string and an `at` epoch time).

        Entries are grouped per bucket (a downstream repo, lower-cased); afterwards no
        bucket holds entries older than `keep_seconds` or more than `keep_per_repo`
        entries (the newest are kept). One round trip or transaction per call.
        """

    async def audit_entries(
        self, bucket: str | None = None, *, since: float = 0.0, limit: int = 1000
    ) -> list[dict[str, Any]]:
        """Up to `limit` entries at or after `since`, newest first; every bucket if None."""

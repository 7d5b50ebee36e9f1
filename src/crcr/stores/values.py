"""Values the state store takes and returns, shared by its roles, backends and callers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


class StateStoreUnavailable(Exception):
    """The backing server or file cannot be reached; callers fail closed (503)."""


@dataclass(frozen=True)
class JobRecord:
    """A job's lifecycle state plus the facts recorded with it (timestamps, conclusion)."""

    state: str
    data: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Transition:
    """Outcome of a compare-and-set on a job: whether it applied, and what was there.

    `counted` is False when a `JobCount` given with the transition refused it (nothing
    was written); True otherwise. `claim_value` is the value settled on the `ClaimRef`
    read with the transition (None: none settled, or none asked for).
    """

    applied: bool
    previous: JobRecord | None
    counted: bool = True
    claim_value: str | None = None


@dataclass(frozen=True)
class JobCount:
    """A bound checked and hit in the transition's own step: at most `limit` hits on
    `key` within `window_seconds` (a sliding window, as `hit_rate_limit`'s).

    A refused count refuses the transition and is not recorded; a count allowed is
    recorded whether or not the transition then applies (a repeat counts again).
    """

    key: str
    limit: int
    window_seconds: float


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
class ClaimRef:
    """One claim of `claim_lease` (its `name` and `key`), to be read in another step."""

    name: str
    key: str


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

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

"""The state store contract: everything the relay keeps between requests.

Two backends implement it (Redis for scale, SQLite embedded) and one contract test
suite runs against both. The store is deliberately dumb: it offers atomic primitives
(compare-and-set, sliding-window counting, leases); the decisions — which transitions
are legal, what a duplicate is — live in the relay's pure core.

`StateStore` is the union of the roles in `stores/roles/`: what the factory opens and
the runtime wires. Everything else asks for the roles it uses.
"""

from __future__ import annotations

from typing import Protocol

from crcr.stores.roles import (
    AllowlistStamp,
    AuditLog,
    Bisections,
    BudgetSlots,
    Caches,
    Deadlines,
    Demotions,
    Dispatches,
    Flags,
    GovernanceRecords,
    Idempotency,
    JobStates,
    JobSummaries,
    LeaderLock,
    LeaseClaims,
    Lifecycle,
    PullHeads,
    RateLimiter,
    RetryQueue,
)
from crcr.stores.values import (
    ClaimRef,
    JobCount,
    JobRecord,
    LeaseClaim,
    LeasedItem,
    QueueStats,
    RateDecision,
    StateStoreUnavailable,
    Transition,
)

__all__ = [
    "ClaimRef",
    "JobCount",
    "JobRecord",
    "LeaseClaim",
    "LeasedItem",
    "QueueStats",
    "RateDecision",
    "StateStore",
    "StateStoreUnavailable",
    "Transition",
]


class StateStore(
    Lifecycle,
    Idempotency,
    Dispatches,
    JobStates,
    Deadlines,
    RateLimiter,
    Caches,
    Flags,
    JobSummaries,
    RetryQueue,
    Demotions,
    GovernanceRecords,
    LeaseClaims,
    LeaderLock,
    AllowlistStamp,
    AuditLog,
    Bisections,
    BudgetSlots,
    PullHeads,
    Protocol,
):
    """Everything the relay keeps between requests (SPEC §4, §5, §7): every role at once.

    Every record has a TTL (`ttl` seconds) except retry-queue items, which stay until
    acknowledged: a failed delivery must never expire silently, and temporary
    demotions, which last until the relay ends them.
    """

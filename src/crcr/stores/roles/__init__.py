"""The state store's roles: one small protocol per thing a consumer keeps in it.

Each module mirrors the backend mixins of the same name (`stores/redis/<role>.py`,
`stores/sqlite/<role>.py`), which declare the roles they fill; `StateStore` is their
union. A consumer asks for the roles it uses, or for a small intersection of them
declared beside it.
"""

from __future__ import annotations

from crcr.stores.roles.audit import AllowlistStamp, AuditLog
from crcr.stores.roles.bisections import Bisections
from crcr.stores.roles.budget_slots import BudgetSlots
from crcr.stores.roles.caches import Caches, Flags, JobSummaries
from crcr.stores.roles.deadlines import Deadlines
from crcr.stores.roles.demotions import Demotions
from crcr.stores.roles.dispatches import Dispatches, Idempotency
from crcr.stores.roles.governance import GovernanceRecords
from crcr.stores.roles.jobs import JobStates
from crcr.stores.roles.lease_claims import LeaseClaims
from crcr.stores.roles.lifecycle import Lifecycle
from crcr.stores.roles.lock import LeaderLock
from crcr.stores.roles.pull_heads import PullHeads
from crcr.stores.roles.queues import RetryQueue
from crcr.stores.roles.rate_limit import RateLimiter

__all__ = [
    "AllowlistStamp",
    "AuditLog",
    "Bisections",
    "BudgetSlots",
    "Caches",
    "Deadlines",
    "Demotions",
    "Dispatches",
    "Flags",
    "GovernanceRecords",
    "Idempotency",
    "JobStates",
    "JobSummaries",
    "LeaderLock",
    "LeaseClaims",
    "Lifecycle",
    "PullHeads",
    "RateLimiter",
    "RetryQueue",
]

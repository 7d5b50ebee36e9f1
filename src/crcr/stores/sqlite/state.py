"""The embedded SQLite state store: one file, shared safely by worker processes."""

from __future__ import annotations

from crcr.stores.sqlite.audit import SqliteAudit
from crcr.stores.sqlite.bisections import SqliteBisections
from crcr.stores.sqlite.budget_slots import SqliteBudgetSlots
from crcr.stores.sqlite.caches import SqliteCaches
from crcr.stores.sqlite.deadlines import SqliteDeadlines
from crcr.stores.sqlite.demotions import SqliteDemotions
from crcr.stores.sqlite.dispatches import SqliteDispatches
from crcr.stores.sqlite.governance import SqliteGovernance
from crcr.stores.sqlite.jobs import SqliteJobs
from crcr.stores.sqlite.lease_claims import SqliteLeaseClaims
from crcr.stores.sqlite.lock import SqliteLock
from crcr.stores.sqlite.pull_heads import SqlitePullHeads
from crcr.stores.sqlite.queues import SqliteQueues
from crcr.stores.sqlite.rate_limit import SqliteRateLimit


class SqliteStateStore(
    SqliteDispatches,
    SqliteJobs,
    SqliteRateLimit,
    SqliteCaches,
    SqliteQueues,
    SqliteDeadlines,
    SqliteLock,
    SqliteLeaseClaims,
    SqliteDemotions,
    SqliteGovernance,
    SqliteAudit,
    SqliteBisections,
    SqliteBudgetSlots,
    SqlitePullHeads,
):
    """`StateStore` in a SQLite file; expired rows read as absent and are purged later.

    One part per role of `stores/roles/`, each in a module of its own declaring the roles it
    fills; they share the database of `SqliteStoreBase`.
    """

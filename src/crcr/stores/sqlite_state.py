"""The embedded SQLite state store: one file, shared safely by worker processes."""

from __future__ import annotations

from crcr.stores.sqlite_caches import SqliteCaches
from crcr.stores.sqlite_deadlines import SqliteDeadlines
from crcr.stores.sqlite_dispatches import SqliteDispatches
from crcr.stores.sqlite_jobs import SqliteJobs
from crcr.stores.sqlite_lock import SqliteLock
from crcr.stores.sqlite_queues import SqliteQueues
from crcr.stores.sqlite_rate_limit import SqliteRateLimit


class SqliteStateStore(
    SqliteDispatches,
    SqliteJobs,
    SqliteRateLimit,
    SqliteCaches,
    SqliteQueues,
    SqliteDeadlines,
    SqliteLock,
):
    """`StateStore` in a SQLite file; expired rows read as absent and are purged later.

    One part per concern of the protocol, each in a module of its own; they share the
    database of `SqliteStoreBase`.
    """

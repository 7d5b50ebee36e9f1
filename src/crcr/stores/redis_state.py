"""The Redis state store: shared by every relay instance, atomic through Lua scripts."""

from __future__ import annotations

from crcr.stores.redis_caches import RedisCaches
from crcr.stores.redis_deadlines import RedisDeadlines
from crcr.stores.redis_dispatches import RedisDispatches
from crcr.stores.redis_jobs import RedisJobs
from crcr.stores.redis_lock import RedisLock
from crcr.stores.redis_queues import RedisQueues
from crcr.stores.redis_rate_limit import RedisRateLimit


class RedisStateStore(
    RedisDispatches,
    RedisJobs,
    RedisRateLimit,
    RedisCaches,
    RedisQueues,
    RedisDeadlines,
    RedisLock,
):
    """`StateStore` on one Redis (or Cluster-compatible) database.

    One part per concern of the protocol, each in a module of its own; they share the
    connections, key layout and script runner of `RedisStoreBase`.
    """

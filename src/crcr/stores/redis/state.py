"""The Redis state store: shared by every relay instance, atomic through Lua scripts."""

from __future__ import annotations

from crcr.stores.redis.audit import RedisAudit
from crcr.stores.redis.bisections import RedisBisections
from crcr.stores.redis.budget_slots import RedisBudgetSlots
from crcr.stores.redis.caches import RedisCaches
from crcr.stores.redis.deadlines import RedisDeadlines
from crcr.stores.redis.demotions import RedisDemotions
from crcr.stores.redis.dispatches import RedisDispatches
from crcr.stores.redis.governance import RedisGovernance
from crcr.stores.redis.jobs import RedisJobs
from crcr.stores.redis.lease_claims import RedisLeaseClaims
from crcr.stores.redis.lock import RedisLock
from crcr.stores.redis.pull_heads import RedisPullHeads
from crcr.stores.redis.queues import RedisQueues
from crcr.stores.redis.rate_limit import RedisRateLimit
from crcr.stores.redis.schema import RedisSchema


class RedisStateStore(
    RedisDispatches,
    RedisJobs,
    RedisRateLimit,
    RedisCaches,
    RedisQueues,
    RedisDeadlines,
    RedisLock,
    RedisLeaseClaims,
    RedisDemotions,
    RedisGovernance,
    RedisAudit,
    RedisBisections,
    RedisBudgetSlots,
    RedisPullHeads,
    RedisSchema,
):
    """`StateStore` on one Redis (or Cluster-compatible) database.

    One part per role of `stores/roles/`, each in a module of its own declaring the roles it
    fills; they share the connections, key layout and script runner of `RedisStoreBase`.
    """

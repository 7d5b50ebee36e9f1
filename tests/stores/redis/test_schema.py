"""The Redis store's data carries a schema version: older data is upgraded, newer refused.

The version 1 data here is written key by key as crcr wrote it before versions existed
(every job under a tag of its own, every deadline in one set), on one server and on a
three-master Cluster, where its keys lie on every node.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import redis.asyncio

from crcr.stores.keys import RedisKeys, key_part
from crcr.stores.redis.state import RedisStateStore
from crcr.stores.schema import REDIS_STATE_SCHEMA, SchemaTooNew
from crcr.stores.state import JobRecord

pytestmark = pytest.mark.redis

# Job keys as the relay makes them, and ones with the characters keys escape.
JOBS = [f"d{n}:org/r{n % 7}:{n}:1:build" for n in range(60)] + ["a}b{c", "50%:x"]


Admin = redis.asyncio.Redis | redis.asyncio.RedisCluster


@pytest.fixture(params=["redis", "redis-cluster"])
async def opened(
    request: pytest.FixtureRequest,
) -> AsyncIterator[tuple[RedisStateStore, Admin, str]]:
    """A store on an empty namespace of one server or of the Cluster, a plain client to
    the same database, and the namespace's prefix.
    """
    cluster = request.param == "redis-cluster"
    url: str = request.getfixturevalue("redis_cluster_url" if cluster else "redis_url")
    prefix: str = request.getfixturevalue("cluster_namespace" if cluster else "redis_namespace")
    admin: Admin = (
        redis.asyncio.RedisCluster.from_url(url, decode_responses=True)
        if cluster
        else redis.asyncio.Redis.from_url(url, decode_responses=True)
    )
    store = RedisStateStore.from_url(url, prefix=prefix, cluster=cluster)
    yield store, admin, prefix
    await store.close()
    await admin.aclose()


async def _write_version_1(admin: Admin, prefix: str) -> None:
    """What crcr wrote before versions existed: the layout upgraded here."""
    for n, job in enumerate(JOBS):
        key = f"{prefix}{{job:{key_part(job)}}}"
        await admin.hset(key, mapping={"state": "in_progress", "d:in_progress_at": f"{n}.5"})
        await admin.pexpire(key, 3_600_000)
        if n % 2 == 0:  # half of them tracked, with deadlines in job order
            await admin.zadd(f"{prefix}{{deadlines}}", {job: 1000 + n})
    await admin.set(f"{prefix}{{claim:delivery-1}}", "1")  # a key whose layout stays


async def test_version_1_data_is_upgraded_in_place_and_stamped(
    opened: tuple[RedisStateStore, Admin, str],
) -> None:
    store, admin, prefix = opened
    await _write_version_1(admin, prefix)
    assert await store.stored_schema_version() is None

    assert await store.upgrade_schema() == 1

    assert await store.stored_schema_version() == REDIS_STATE_SCHEMA
    for n, job in enumerate(JOBS):
        assert await store.get_job(job) == JobRecord("in_progress", {"in_progress_at": n + 0.5})
        ttl = await admin.pttl(RedisKeys(prefix).job(job))
        assert 0 < ttl <= 3_600_000
    tracked = [job for n, job in enumerate(JOBS) if n % 2 == 0]
    assert await store.overdue(1e9, limit=1000) == tracked
    assert await store.claim_once("delivery-1", 60) is False  # still claimed
    legacy = [key async for key in admin.scan_iter(match=f"{prefix}{{job:*")]
    assert legacy == []
    assert await admin.exists(f"{prefix}{{deadlines}}") == 0
    # The upgraded data behaves as data written by this crcr.
    done = JobRecord("completed", {"conclusion": "success"})
    change = await store.transition_job_and_deadline(
        JOBS[0], allowed_from={"in_progress"}, new=done, ttl=60, deadline=None
    )
    assert change.applied
    assert JOBS[0] not in await store.overdue(1e9, limit=1000)
    assert await store.upgrade_schema() == REDIS_STATE_SCHEMA  # nothing left to do


async def test_an_upgrade_keeps_what_this_crcr_wrote_already(
    opened: tuple[RedisStateStore, Admin, str],
) -> None:
    """Instances starting together: one has written a job anew before another upgrades."""
    store, admin, prefix = opened
    await _write_version_1(admin, prefix)
    newer = JobRecord("completed", {"conclusion": "failure"})
    await store.transition_job(JOBS[0], allowed_from={None}, new=newer, ttl=60)
    await store.track_deadline(JOBS[0], 5.0)

    await store.upgrade_schema()

    assert await store.get_job(JOBS[0]) == newer
    assert (await store.overdue(1e9, limit=1000))[0] == JOBS[0]  # 5.0, not 1000


async def test_new_data_is_stamped_with_this_version(
    opened: tuple[RedisStateStore, Admin, str],
) -> None:
    store = opened[0]
    assert await store.upgrade_schema() == REDIS_STATE_SCHEMA
    assert await store.stored_schema_version() == REDIS_STATE_SCHEMA


async def test_data_of_a_newer_crcr_is_refused_naming_both_versions(
    opened: tuple[RedisStateStore, Admin, str],
) -> None:
    store, admin, prefix = opened
    await admin.set(RedisKeys(prefix).schema(), REDIS_STATE_SCHEMA + 1)
    await admin.set(f"{prefix}{{job:x}}", "left alone")
    with pytest.raises(SchemaTooNew) as refused:
        await store.upgrade_schema()
    message = str(refused.value)
    assert "\n" not in message
    assert f"schema version {REDIS_STATE_SCHEMA + 1}, written by a newer crcr" in message
    assert f"reads schema version {REDIS_STATE_SCHEMA} at most" in message
    assert await admin.get(f"{prefix}{{job:x}}") == "left alone"

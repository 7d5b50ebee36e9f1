"""Every Lua script's keys lie in one Redis Cluster slot, for representative inputs.

Redis Cluster refuses a script whose keys span slots (CROSSSLOT), and a script cannot be
split without losing its atomicity. The contract suite also runs on a real Cluster; this
test names the script and the keys when one breaks the rule, and fails when a script is
added without a representative call here.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import pytest
from redis.cluster import key_slot

from crcr.stores.redis import scripts as lua
from crcr.stores.redis.base import RedisStoreBase
from crcr.stores.redis.state import RedisStateStore
from crcr.stores.state import JobCount, JobRecord

pytestmark = pytest.mark.redis

# Names with the characters that key escaping exists for (separators, hash-tag braces).
JOBS = ["d1:org/r:1:1:build", "a}b{c", "{x}", "plain", "100%"]
QUEUES = ["hud-retry", "a}b{c", "{q}"]
REPOS = ["org/r", "Org/{r}"]
SINGLE_SERVER_ONLY = {lua.TRANSITION_COUNTED_JOB}
"""Scripts a Cluster client never runs: the store takes another path there (their own
docstrings say which)."""


async def _every_script(store: RedisStateStore) -> None:
    started = JobRecord("in_progress", {"at": 1.0})
    for job in JOBS:
        await store.transition_job(job, allowed_from=[None], new=started, ttl=60)
        await store.transition_job_and_deadline(
            job, allowed_from=["in_progress"], new=started, ttl=60, deadline=10.0
        )
        await store.restore_job(
            job, expected_state="in_progress", previous=None, ttl=60, deadline=None
        )
        await store.track_deadline(job, 5.0)
        await store.transition_job_and_deadline(
            job,
            allowed_from=[None],
            new=started,
            ttl=60,
            deadline=10.0,
            count=JobCount(f"jobs:{job}", 10, 60),
        )
    for queue in QUEUES:
        await store.enqueue(queue, "item", {"n": 1})
        leased = await store.lease(queue, lease_seconds=30)
        await store.extend_lease(queue, "item", leased[0].lease_token, lease_seconds=30)
        await store.release(queue, "item", leased[0].lease_token, delay=0)
        await store.wake_retries(queue)
        await store.ack(queue, "item", (await store.lease(queue, lease_seconds=30))[0].lease_token)
        await store.queue_stats(queue)
    for repo in REPOS:
        await store.put_dispatch("d", repo, {"n": 1}, 60)
        await store.update_dispatch("d", repo, {"n": 2}, 60)
        await store.put_dispatches("d2", {repo: {"n": 1}}, 60)
        await store.update_dispatches("d2", {repo: {"n": 2}}, 60)
        await store.hit_rate_limit(repo, 10, 60)
        await store.hit_rate_limit_and_get_dispatch(repo, 10, 60, "d", repo)
        await store.put_job_summary("sha", repo, "job", {"s": 1}, 60)
        await store.job_summaries("sha", repo)
        await store.add_demotion(repo, {"since": "now"})
        await store.update_demotion(repo, {"pr": "url"})
    for key in JOBS:
        await store.claim_lease("oncall", key, "me", lease=30, ttl=60)
        await store.settle_lease("oncall", key, "me", "comment-1", 60)
    await store.acquire_lock("sweeper", "me", 10)
    await store.release_lock("sweeper", "me")


async def test_every_script_touches_keys_of_one_slot(
    redis_url: str, redis_namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs: list[tuple[str, list[str]]] = []
    run_with, pipelined = RedisStoreBase._run_with, RedisStoreBase._pipelined

    async def recording_run(
        self: RedisStoreBase, script: str, keys: Sequence[str], args: Sequence[Any], then: Any = ()
    ) -> list[Any]:
        runs.append((script, list(keys)))
        return await run_with(self, script, keys, args, then)

    async def recording_pipelined(
        self: RedisStoreBase, script: str, calls: Sequence[tuple[Sequence[str], Any]]
    ) -> list[Any]:
        runs.extend((script, list(keys)) for keys, _ in calls)
        return await pipelined(self, script, calls)

    monkeypatch.setattr(RedisStoreBase, "_run_with", recording_run)
    monkeypatch.setattr(RedisStoreBase, "_pipelined", recording_pipelined)
    store = RedisStateStore.from_url(redis_url, prefix=redis_namespace)
    try:
        await _every_script(store)
    finally:
        await store.close()

    names = {text: name for name, text in inspect.getmembers(lua) if name[0].isupper()}
    spanning = sorted(
        f"{names.get(script, '?')}: {keys}"
        for script, keys in runs
        if len({key_slot(key.encode()) for key in keys}) > 1 and script not in SINGLE_SERVER_ONLY
    )
    assert spanning == []
    unexercised = set(names.values()) - {names[script] for script, _ in runs}
    assert unexercised == set(), "add a representative call of these scripts above"

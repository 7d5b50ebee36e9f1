"""What only the Redis store promises: failing closed, and Cluster-safe key layout."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
import redis
import redis.asyncio
from redis.cluster import key_slot
from redis.exceptions import ResponseError

from crcr.stores.keys import RedisKeys, job_bucket
from crcr.stores.redis.state import RedisStateStore
from crcr.stores.state import JobRecord, StateStoreUnavailable


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A local port that is bound but never listens, so connecting is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


async def test_an_unreachable_redis_is_reported_as_unavailable(closed_port: int) -> None:
    store = RedisStateStore.from_url(f"redis://127.0.0.1:{closed_port}/15", timeout=1.0)
    try:
        with pytest.raises(StateStoreUnavailable, match="Redis is unavailable"):
            await store.ping()
        with pytest.raises(StateStoreUnavailable):
            await store.hit_rate_limit("org/repo", 100, 60)
        with pytest.raises(StateStoreUnavailable):
            await store.transition_job(
                "job", allowed_from=[None], new=JobRecord("DISPATCHED"), ttl=60
            )
    finally:
        await store.close()


def test_every_key_of_a_queue_shares_one_cluster_slot() -> None:
    keys = RedisKeys("crcr:")
    parts = ["items", "attempts", "leases", "ready", "enqueued"]
    slots = {key_slot(keys.queue("hud-retry", part).encode()) for part in parts}
    assert len(slots) == 1


def test_keys_carry_the_prefix_and_a_hash_tag_that_braces_cannot_break() -> None:
    keys = RedisKeys("crcr:")
    job = "d1:org/r:1:1:build"
    assert keys.job(job) == f"crcr:{{jobs:{job_bucket(job):02d}}}:d1%3Aorg/r%3A1%3A1%3Abuild"
    assert keys.deadlines_of(job) == f"crcr:{{jobs:{job_bucket(job):02d}}}:deadlines"
    assert keys.job("a}b{c").endswith(":a%7Db%7Bc")
    assert keys.queue("hud", "ready") == "crcr:{q:hud}:ready"
    tricky = keys.queue("a}b{c", "items")
    assert tricky.startswith("crcr:{q:a%7Db%7Bc}")
    with pytest.raises(ValueError, match="prefix"):
        RedisKeys("crcr:{x}:")


@pytest.fixture
async def private_store(private_redis: redis.Redis) -> AsyncIterator[RedisStateStore]:
    """A store on `private_redis`: SCRIPT FLUSH empties the whole server's script cache,
    which on the shared server would reach every other test running at the same time."""
    path = private_redis.connection_pool.connection_kwargs["path"]
    store = RedisStateStore.from_url(f"unix://{path}")
    try:
        yield store
    finally:
        await store.close()


@pytest.mark.redis
async def test_the_combined_rate_limit_call_survives_a_script_flush(
    private_redis: redis.Redis, private_store: RedisStateStore
) -> None:
    first, _ = await private_store.hit_rate_limit_and_get_dispatch("org/r", 5, 60, "d", "org/r")
    assert first.allowed
    private_redis.script_flush()  # as after a Redis restart

    decision, record = await private_store.hit_rate_limit_and_get_dispatch(
        "org/r", 5, 60, "d", "org/r"
    )

    assert (decision.allowed, decision.remaining, record) == (True, 3, None)


@pytest.mark.redis
async def test_callers_that_find_a_script_missing_together_load_it_once(
    private_redis: redis.Redis, private_store: RedisStateStore
) -> None:
    # Each loading it on a connection of its own took 500 at once on a fresh Cluster
    # node, past the client's limit: every caller failed with MaxConnectionsError.
    await private_store.hit_rate_limit("org/warm", 1, 60)
    private_redis.script_flush()  # as after a Redis restart
    private_redis.config_resetstat()

    decisions = await asyncio.gather(
        *(private_store.hit_rate_limit("org/r", 1_000, 60) for _ in range(300))
    )

    assert sorted(d.remaining for d in decisions) == list(range(700, 1_000))
    loads = private_redis.info("commandstats").get("cmdstat_script|load", {})
    assert loads.get("calls") == 1


# --- a server that refuses (failover, full memory) -------------------------------


@pytest.fixture
def private_redis() -> Iterator[redis.Redis]:
    """A Redis server of this test's own, to put in states the shared one must never be in.

    It listens on a Unix socket in a short temporary directory (socket paths are limited
    to ~100 bytes); a client to administer it is yielded.
    """
    server = shutil.which("redis-server")
    if server is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("redis-server is not installed (CI requires it)")
        pytest.skip("redis-server is not installed")
    with tempfile.TemporaryDirectory(prefix="crcr-redis-") as directory:
        path = str(Path(directory) / "redis.sock")
        options = ["--port", "0", "--unixsocket", path, "--dir", directory, "--save", ""]
        process = subprocess.Popen([server, *options], stdout=subprocess.DEVNULL)
        admin = redis.Redis(unix_socket_path=path, decode_responses=True)
        try:
            started = time.monotonic()
            while not Path(path).exists() or not _answers(admin):
                assert process.poll() is None, "redis-server exited"
                assert time.monotonic() - started < 10, "redis-server did not start"
                time.sleep(0.01)
            yield admin
        finally:
            admin.close()
            process.terminate()
            process.wait(timeout=10)


def _answers(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False


def _demoted_to_replica(admin: redis.Redis, primary_port: int) -> None:
    admin.execute_command("REPLICAOF", "127.0.0.1", primary_port)


def _replica_without_its_primary(admin: redis.Redis, primary_port: int) -> None:
    admin.config_set("replica-serve-stale-data", "no")
    admin.execute_command("REPLICAOF", "127.0.0.1", primary_port)


def _out_of_memory(admin: redis.Redis, primary_port: int) -> None:
    admin.config_set("maxmemory", 1)  # safe: on this test's own server only


@pytest.mark.redis
@pytest.mark.parametrize(
    "refusing",
    [_demoted_to_replica, _replica_without_its_primary, _out_of_memory],
    ids=["READONLY", "MASTERDOWN", "OOM"],
)
async def test_a_server_that_refuses_writes_is_reported_as_unavailable(
    private_redis: redis.Redis, closed_port: int, refusing: Callable[[redis.Redis, int], None]
) -> None:
    refusing(private_redis, closed_port)  # a "primary" on a port nobody listens on
    path = private_redis.connection_pool.connection_kwargs["path"]
    store = RedisStateStore.from_url(f"unix://{path}", timeout=2.0)
    started = JobRecord("in_progress", {"started_at": 1.5})
    # One write through each way the store talks to Redis.
    writes = {
        "plain command": lambda: store.claim_once("delivery", 60),
        "batched script": lambda: store.transition_job(
            "job", allowed_from=[None], new=started, ttl=60
        ),
        "batched script and commands": lambda: store.transition_job_and_deadline(
            "job", allowed_from=[None], new=started, ttl=60, deadline=1000.0
        ),
        "pipelined scripts": lambda: store.put_dispatches("d", {"org/r": {"n": 1}}, 60),
        "transaction": lambda: store.track_deadline("job", 1000.0),
    }
    outcomes: dict[str, str] = {}
    try:
        for way, write in writes.items():
            try:
                await write()
                outcomes[way] = "written"
            except Exception as exc:
                outcomes[way] = type(exc).__name__
    finally:
        await store.close()
    assert outcomes == dict.fromkeys(writes, "StateStoreUnavailable")


async def test_an_error_that_is_a_bug_stays_loud(redis_url: str, redis_namespace: str) -> None:
    store = RedisStateStore.from_url(redis_url, prefix=redis_namespace)
    admin = redis.asyncio.Redis.from_url(redis_url)
    try:
        await admin.set(RedisKeys(redis_namespace).job("job"), "not a hash")
        with pytest.raises(ResponseError, match="WRONGTYPE"):
            await store.transition_job(
                "job", allowed_from=[None], new=JobRecord("in_progress"), ttl=60
            )
    finally:
        await admin.aclose()
        await store.close()


# --- a Redis Cluster that loses a master -------------------------------------------


@pytest.mark.redis
async def test_a_cluster_that_lost_a_master_is_reported_as_unavailable() -> None:
    """Every key lives on one master: with one gone, its keys cannot be served."""
    from redis.asyncio.cluster import RedisCluster
    from tests.redis_cluster import running_cluster

    with running_cluster() as ports:
        store = RedisStateStore.from_url(f"redis://127.0.0.1:{ports[0]}", cluster=True, timeout=2)
        try:
            # `--cluster create` gives the third node the last third of the slots.
            on_third = [f"job-{n}" for n in range(100) if _slot_of_job(f"job-{n}") > 10922]
            elsewhere = [f"job-{n}" for n in range(100) if _slot_of_job(f"job-{n}") <= 10922]
            jobs = on_third[:2] + elsewhere[:2]
            for job in jobs:
                await store.transition_job(job, allowed_from=[None], new=JobRecord("x"), ttl=60)
            lost = redis.Redis(port=ports[2])
            with contextlib.suppress(redis.ConnectionError):  # it hangs up as it exits
                lost.shutdown(nosave=True)
            outcomes: dict[str, str] = {}
            for job in jobs:
                try:
                    await store.get_job(job)
                    outcomes[job] = "served"
                except Exception as exc:
                    outcomes[job] = type(exc).__name__
            # The others' keys are served until the cluster declares itself down (the
            # node timeout, 5 s), then refused as unavailable (CLUSTERDOWN) as well.
            assert {outcomes[job] for job in on_third[:2]} == {"StateStoreUnavailable"}
            assert {outcomes[job] for job in elsewhere[:2]} <= {"served", "StateStoreUnavailable"}
            assert isinstance(store._client, RedisCluster)
        finally:
            await store.close()


def _slot_of_job(job: str) -> int:
    return int(key_slot(RedisKeys("crcr:").job(job).encode()))

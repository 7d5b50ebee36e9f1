"""The cache, flag and job-summary roles' contract, on Redis and on SQLite."""

from __future__ import annotations

from tests.stores.test_state_contract import TTL
from tests.waiting import eventually

from crcr.stores.roles import Caches, Flags, JobSummaries

# --- TTL caches -------------------------------------------------------------------


async def test_cache_values_are_set_read_deleted_and_namespaced(store: Caches) -> None:
    assert await store.cache_get("jwks", "kid") is None
    await store.cache_set("jwks", "kid", '{"keys": []}', 60)
    await store.cache_set("token", "kid", "other", 60)
    assert await store.cache_get("jwks", "kid") == '{"keys": []}'
    await store.cache_delete("jwks", "kid")
    assert await store.cache_get("jwks", "kid") is None
    assert await store.cache_get("token", "kid") == "other"


async def test_cache_values_expire(store: Caches) -> None:
    await store.cache_set("allowlist", "current", "v1", 0.2)
    assert await store.cache_get("allowlist", "current") == "v1"

    async def gone() -> bool:
        return await store.cache_get("allowlist", "current") is None

    assert await eventually(gone) >= 0.1


# --- flags and job summaries ------------------------------------------------------


async def test_flags_are_per_name_sha_and_repo(store: Flags) -> None:
    assert await store.has_flag("check-runs-wanted", "sha1", "org/r") is False
    await store.set_flag("check-runs-wanted", "sha1", "org/r", TTL)
    assert await store.has_flag("check-runs-wanted", "sha1", "org/r") is True
    assert await store.has_flag("check-runs-wanted", "sha2", "org/r") is False
    assert await store.has_flag("check-runs-wanted", "sha1", "org/other") is False
    assert await store.has_flag("notified", "sha1", "org/r") is False


async def test_job_summaries_are_replaced_per_job_and_grouped(store: JobSummaries) -> None:
    assert await store.job_summaries("sha1", "org/r") == {}
    await store.put_job_summary("sha1", "org/r", "j:1 {a}", {"status": "in_progress"}, TTL)
    await store.put_job_summary("sha1", "org/r", "j:2", {"status": "in_progress"}, TTL)
    await store.put_job_summary("sha1", "org/r", "j:1 {a}", {"status": "completed"}, TTL)
    await store.put_job_summary("sha1", "org/r2", "j:3", {"status": "queued"}, TTL)
    await store.put_job_summary("sha2", "org/r", "j:4", {"status": "queued"}, TTL)
    assert await store.job_summaries("sha1", "org/r") == {
        "j:1 {a}": {"status": "completed"},
        "j:2": {"status": "in_progress"},
    }

"""The StateStore contract across roles: the union answers, and every record expires.

Each role's own contract is in `test_<role>_contract.py` beside this file; all of them
run on Redis, on a Redis Cluster and on SQLite (`conftest.store`).
"""

from __future__ import annotations

from tests.waiting import eventually

from crcr.stores.state import JobRecord, StateStore

TTL = 3600


async def test_ping_answers(store: StateStore) -> None:
    await store.ping()


async def test_records_expire_after_their_ttl(store: StateStore) -> None:
    await store.claim_once("delivery", 1)
    await store.put_dispatch("d", "org/r", {"state": "pending"}, 1)
    await store.transition_job("job", allowed_from=[None], new=JobRecord("DISPATCHED"), ttl=1)
    await store.transition_job("undone", allowed_from=[None], new=JobRecord("B"), ttl=TTL)
    await store.restore_job(
        "undone", expected_state="B", previous=JobRecord("A"), ttl=1, deadline=None
    )
    await store.set_flag("wanted", "sha", "org/r", 1)
    await store.put_job_summary("sha", "org/r", "job", {"status": "completed"}, 1)
    await store.put_job_summary("sha", "org/r", "long", {"status": "in_progress"}, TTL)

    async def all_expired() -> bool:
        return (
            await store.get_dispatch("d", "org/r") is None
            and await store.get_job("job") is None
            and await store.get_job("undone") is None
            and not await store.has_flag("wanted", "sha", "org/r")
            and "job" not in await store.job_summaries("sha", "org/r")
        )

    assert await eventually(all_expired) >= 0.5
    assert await store.claim_once("delivery", 1) is True
    assert await store.job_summaries("sha", "org/r") == {"long": {"status": "in_progress"}}
    created = await store.transition_job(
        "job", allowed_from=[None], new=JobRecord("DISPATCHED"), ttl=TTL
    )
    assert created.applied and created.previous is None

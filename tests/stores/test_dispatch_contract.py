"""The idempotency and dispatch-record roles' contract, on Redis and on SQLite."""

from __future__ import annotations

from tests.stores.test_state_contract import TTL

from crcr.stores.roles import Dispatches, Idempotency

# --- idempotency and dispatch records --------------------------------------------


async def test_claim_once_admits_only_the_first_claimant(store: Idempotency) -> None:
    assert await store.claim_once("delivery-1", TTL) is True
    assert await store.claim_once("delivery-1", TTL) is False
    assert await store.claim_once("delivery-2", TTL) is True


async def test_dispatch_record_is_created_once_and_merged_on_update(store: Dispatches) -> None:
    record = {"state": "pending", "head_sha": "abc123", "pr_number": 7, "labels": ["x"]}
    assert await store.put_dispatch("d1", "org/repo", record, TTL) is True
    assert await store.put_dispatch("d1", "org/repo", {"state": "other"}, TTL) is False
    assert await store.get_dispatch("d1", "org/repo") == record

    assert await store.update_dispatch("d1", "org/repo", {"state": "DISPATCHED"}, TTL) is True
    assert await store.get_dispatch("d1", "org/repo") == {**record, "state": "DISPATCHED"}


async def test_dispatch_records_are_per_delivery_and_repo(store: Dispatches) -> None:
    await store.put_dispatch("d1", "org/a", {"n": 1}, TTL)
    assert await store.get_dispatch("d1", "org/b") is None
    assert await store.get_dispatch("d2", "org/a") is None
    assert await store.update_dispatch("d1", "org/b", {"n": 2}, TTL) is False
    assert await store.get_dispatch("d1", "org/b") is None


async def test_dispatch_records_are_written_in_batches_without_overwriting(
    store: Dispatches,
) -> None:
    await store.put_dispatch("d1", "org/a", {"state": "DISPATCHED"}, TTL)
    records = {"org/a": {"state": "pending"}, "org/b": {"state": "pending"}}

    assert await store.put_dispatches("d1", records, TTL) == {"org/b"}
    assert await store.get_dispatch("d1", "org/a") == {"state": "DISPATCHED"}

    await store.update_dispatches(
        "d1", {"org/b": {"state": "DISPATCHED"}, "org/missing": {"state": "x"}}, TTL
    )
    assert await store.get_dispatch("d1", "org/b") == {"state": "DISPATCHED"}
    assert await store.get_dispatch("d1", "org/missing") is None


async def test_an_empty_dispatch_record_still_exists(store: Dispatches) -> None:
    assert await store.put_dispatch("d1", "org/a", {}, TTL) is True
    assert await store.get_dispatch("d1", "org/a") == {}
    assert await store.put_dispatch("d1", "org/a", {}, TTL) is False


async def test_dispatch_records_are_read_in_batches_leaving_out_missing_ones(
    store: Dispatches,
) -> None:
    await store.put_dispatches("d-9", {"org/a": {"n": 1}, "org/b": {"n": 2}}, TTL)

    found = await store.get_dispatches("d-9", ["org/a", "org/b", "org/missing"])

    assert found == {"org/a": {"n": 1}, "org/b": {"n": 2}}
    assert await store.get_dispatches("d-9", []) == {}


async def test_a_thousand_backends_records_are_written_merged_and_read_in_batches(
    store: Dispatches,
) -> None:
    repos = [f"org{n % 7}/backend{n}" for n in range(1_200)]  # a thousand-backend fan-out
    await store.put_dispatch("d-1k", repos[600], {"n": -1}, TTL)

    created = await store.put_dispatches("d-1k", {repo: {"n": 0} for repo in repos}, TTL)
    await store.update_dispatches("d-1k", {repo: {"sent": True} for repo in repos[::2]}, TTL)
    found = await store.get_dispatches("d-1k", repos)

    assert created == set(repos) - {repos[600]}
    assert found[repos[600]] == {"n": -1, "sent": True}
    assert found[repos[1]] == {"n": 0} and found[repos[1_199]] == {"n": 0}
    assert found[repos[1_198]] == {"n": 0, "sent": True}
    assert len(found) == 1_200

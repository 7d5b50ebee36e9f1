"""The StateStore contract for claims with a lease, on Redis and on SQLite alike.

A claim lets one of many workers do a thing once (post the oncall comment on a PR,
SPEC §7): the first claimant holds it for a lease, settles a value (the comment's id)
that every later claimant is given instead, and a holder that dies before settling
is replaced when its lease ends.
"""

from __future__ import annotations

import asyncio

import pytest
from tests.stores.test_state_contract import TTL
from tests.waiting import eventually

from crcr.stores.state import LeaseClaim, StateStore

NAME, KEY = "oncall-comment", "pytorch/pytorch#12:org/critical"


async def test_the_first_claimant_holds_the_claim_and_others_wait(store: StateStore) -> None:
    assert await store.claim_lease(NAME, KEY, "a", lease=30, ttl=TTL) == LeaseClaim(held=True)
    assert await store.claim_lease(NAME, KEY, "b", lease=30, ttl=TTL) == LeaseClaim(held=False)
    assert await store.claim_lease(NAME, KEY, "a", lease=30, ttl=TTL) == LeaseClaim(held=True)
    assert await store.claim_lease(NAME, "other", "b", lease=30, ttl=TTL) == LeaseClaim(held=True)
    assert await store.leased_value(NAME, KEY) is None


async def test_a_settled_value_is_what_every_later_claimant_gets(store: StateStore) -> None:
    await store.claim_lease(NAME, KEY, "a", lease=30, ttl=TTL)

    assert await store.settle_lease(NAME, KEY, "a", "comment-1001", TTL) == "comment-1001"

    for owner in ("a", "b"):
        claim = await store.claim_lease(NAME, KEY, owner, lease=30, ttl=TTL)
        assert claim == LeaseClaim(held=False, value="comment-1001")
    assert await store.leased_value(NAME, KEY) == "comment-1001"


async def test_the_first_value_settled_wins(store: StateStore) -> None:
    await store.claim_lease(NAME, KEY, "a", lease=30, ttl=TTL)
    assert await store.settle_lease(NAME, KEY, "a", "comment-1", TTL) == "comment-1"

    assert await store.settle_lease(NAME, KEY, "b", "comment-2", TTL) == "comment-1"
    assert await store.leased_value(NAME, KEY) == "comment-1"


async def test_giving_up_a_hold_lets_the_next_claimant_in_at_once(store: StateStore) -> None:
    await store.claim_lease(NAME, KEY, "a", lease=300, ttl=TTL)

    assert await store.settle_lease(NAME, KEY, "b", None, TTL) is None  # not b's to give up
    assert (await store.claim_lease(NAME, KEY, "b", lease=30, ttl=TTL)).held is False
    assert await store.settle_lease(NAME, KEY, "a", None, TTL) is None

    assert (await store.claim_lease(NAME, KEY, "b", lease=30, ttl=TTL)).held is True


async def test_a_holder_that_died_is_replaced_when_its_lease_ends(store: StateStore) -> None:
    assert (await store.claim_lease(NAME, KEY, "dead", lease=0.3, ttl=TTL)).held is True

    async def taken_over() -> bool:
        return (await store.claim_lease(NAME, KEY, "b", lease=30, ttl=TTL)).held

    assert await eventually(taken_over) >= 0.2
    assert (await store.claim_lease(NAME, KEY, "dead", lease=0.3, ttl=TTL)).held is False


async def test_a_claim_and_its_value_expire_with_the_ttl(store: StateStore) -> None:
    await store.claim_lease(NAME, KEY, "a", lease=30, ttl=1)
    await store.settle_lease(NAME, KEY, "a", "comment-1", 1)

    async def forgotten() -> bool:
        return await store.leased_value(NAME, KEY) is None

    await eventually(forgotten, within=5)
    assert (await store.claim_lease(NAME, KEY, "b", lease=30, ttl=TTL)).held is True


async def test_only_one_of_many_concurrent_claimants_holds_the_claim(store: StateStore) -> None:
    claims = await asyncio.gather(
        *(store.claim_lease(NAME, KEY, f"worker-{i}", lease=30, ttl=TTL) for i in range(50))
    )
    assert sum(claim.held for claim in claims) == 1


async def test_an_empty_value_is_refused(store: StateStore) -> None:
    with pytest.raises(ValueError, match="must not be empty"):
        await store.settle_lease(NAME, KEY, "a", "", TTL)

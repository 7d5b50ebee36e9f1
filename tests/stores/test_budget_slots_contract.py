"""The StateStore contract for budget slots (SPEC §15), on Redis, Redis Cluster and SQLite.

A capped backend's pool counts its unfinished dispatches; the excess waits in line,
oldest first, one place per PR, and goes as slots free. Every change and the admission
it allows are one atomic step, whatever instance asks.
"""

from __future__ import annotations

import asyncio

from tests.stores.test_state_contract import TTL
from tests.waiting import eventually

from crcr.stores.roles.budget_slots import SlotTerms
from crcr.stores.state import StateStore

POOL = "org/xpu"
ONE = SlotTerms(limit=1, hold_for=3600, ttl=TTL)


def _payload(holder: str) -> dict[str, str]:
    return {"holder": holder}


async def _join(store: StateStore, place: str, holder: str, terms: SlotTerms = ONE) -> list[str]:
    change = await store.join_pool(POOL, place, holder, _payload(holder), terms)
    return [str(p["holder"]) for p in change.admitted]


async def test_the_first_takes_the_slot_and_the_rest_wait_in_order(store: StateStore) -> None:
    assert await _join(store, "pr:1", "d1") == ["d1"]
    assert await _join(store, "pr:2", "d2") == []
    assert await _join(store, "pr:3", "d3") == []

    view = await store.pool_view(POOL)
    assert list(view.running) == ["d1"]
    assert [place for place, _ in view.waiting] == ["pr:2", "pr:3"]


async def test_a_slot_frees_when_every_job_that_reported_has_finished(store: StateStore) -> None:
    await _join(store, "pr:1", "d1")
    await _join(store, "pr:2", "d2")
    await store.note_job(POOL, "d1", "build", finished=False, terms=ONE)
    await store.note_job(POOL, "d1", "test", finished=False, terms=ONE)

    first = await store.note_job(POOL, "d1", "build", finished=True, terms=ONE)
    second = await store.note_job(POOL, "d1", "test", finished=True, terms=ONE)

    assert first.admitted == ()
    assert [p["holder"] for p in second.admitted] == ["d2"]
    assert list((await store.pool_view(POOL)).running) == ["d2"]


async def test_a_newer_head_of_a_pr_replaces_its_waiting_older_head_in_place(
    store: StateStore,
) -> None:
    await _join(store, "pr:1", "d1")
    await _join(store, "pr:2", "d2")
    await _join(store, "pr:3", "d3")

    change = await store.join_pool(POOL, "pr:2", "d2b", _payload("d2b"), ONE)

    assert [p["holder"] for p in change.replaced] == ["d2"]
    waiting = (await store.pool_view(POOL)).waiting
    assert [(place, p["holder"]) for place, p in waiting] == [("pr:2", "d2b"), ("pr:3", "d3")]


def _push(head: str, before: str, updated_at: str = "") -> dict[str, str]:
    return {"head_sha": head, "before": before, "updated_at": updated_at}


async def _waiting(store: StateStore) -> list[tuple[str, str]]:
    return [(place, p["holder"]) for place, p in (await store.pool_view(POOL)).waiting]


async def test_an_older_push_arriving_late_is_turned_away_not_queued_over_the_newer(
    store: StateStore,
) -> None:
    await _join(store, "pr:1", "d1")
    await store.join_pool(POOL, "pr:2", "d-c", _payload("d-c"), ONE, _push("c", before="b"))

    # The push to `b` (from `a`) lands after the push from `b` to `c`.
    late = await store.join_pool(POOL, "pr:2", "d-b", _payload("d-b"), ONE, _push("b", "a"))

    assert [p["holder"] for p in late.replaced] == ["d-b"]
    assert await _waiting(store) == [("pr:2", "d-c")]


async def test_a_newer_push_takes_the_place_and_the_clock_orders_unrelated_ones(
    store: StateStore,
) -> None:
    await _join(store, "pr:1", "d1")
    await store.join_pool(POOL, "pr:2", "d-b", _payload("d-b"), ONE, _push("b", "a"))
    newer = await store.join_pool(POOL, "pr:2", "d-c", _payload("d-c"), ONE, _push("c", "b"))
    assert [p["holder"] for p in newer.replaced] == ["d-b"]

    # A force-push (its `before` unknown here) ordered by `updated_at`: earlier loses...
    earlier = _push("x", "gone", "2026-11-29T09:00:00Z")
    at_nine = await store.join_pool(POOL, "pr:2", "d-x", _payload("d-x"), ONE, earlier)
    assert [p["holder"] for p in at_nine.replaced] == ["d-c"]  # `c` had no time: arrival
    later = _push("y", "other", "2026-11-29T09:00:05Z")
    await store.join_pool(POOL, "pr:2", "d-y", _payload("d-y"), ONE, later)
    turned = await store.join_pool(POOL, "pr:2", "d-x2", _payload("d-x2"), ONE, earlier)

    assert [p["holder"] for p in turned.replaced] == ["d-x2"]
    assert await _waiting(store) == [("pr:2", "d-y")]


async def test_a_join_without_an_order_replaces_in_arrival_order(store: StateStore) -> None:
    await _join(store, "pr:1", "d1")
    await store.join_pool(POOL, "pr:2", "d-c", _payload("d-c"), ONE, _push("c", "b"))

    reopened = await store.join_pool(POOL, "pr:2", "d-r", _payload("d-r"), ONE)

    assert [p["holder"] for p in reopened.replaced] == ["d-c"]
    assert await _waiting(store) == [("pr:2", "d-r")]


async def test_a_redelivered_holder_is_not_queued_again(store: StateStore) -> None:
    assert await _join(store, "pr:1", "d1") == ["d1"]
    assert await _join(store, "pr:1", "d1") == []
    assert (await store.pool_view(POOL)).waiting == []


async def test_leaving_frees_the_slot_or_the_place_in_line(store: StateStore) -> None:
    await _join(store, "pr:1", "d1")
    await _join(store, "pr:2", "d2")
    await _join(store, "pr:3", "d3")

    left = await store.leave_pool(POOL, "d3", ONE)
    assert [p["holder"] for p in left.replaced] == ["d3"]
    freed = await store.leave_pool(POOL, "d1", ONE)
    assert [p["holder"] for p in freed.admitted] == ["d2"]


async def test_a_holder_with_no_news_stops_counting_after_its_time(store: StateStore) -> None:
    brief = SlotTerms(limit=1, hold_for=0.2, ttl=TTL)
    await _join(store, "pr:1", "d1", brief)
    await _join(store, "pr:2", "d2", brief)

    admitted: list[str] = []

    async def refilled() -> bool:  # the store's own clock decides; each pass asks it again
        change = await store.refill_pool(POOL, brief)
        admitted.extend(str(p["holder"]) for p in change.admitted)
        return bool(admitted)

    await eventually(refilled, within=10, what="d1's time to run out")
    assert admitted == ["d2"]


async def test_concurrent_joins_never_fill_more_slots_than_the_cap(store: StateStore) -> None:
    two = SlotTerms(limit=2, hold_for=3600, ttl=TTL)
    joins = [store.join_pool(POOL, f"pr:{n}", f"d{n}", _payload(f"d{n}"), two) for n in range(12)]

    changes = await asyncio.gather(*joins)

    assert sum(len(c.admitted) for c in changes) == 2
    view = await store.pool_view(POOL)
    assert len(view.running) == 2
    assert len(view.waiting) == 10


async def test_a_lower_cap_holds_the_line_until_holders_finish(store: StateStore) -> None:
    two = SlotTerms(limit=2, hold_for=3600, ttl=TTL)
    await _join(store, "pr:1", "d1", two)
    await _join(store, "pr:2", "d2", two)
    await _join(store, "pr:3", "d3", two)

    freed = await store.leave_pool(POOL, "d1", ONE)

    assert freed.admitted == ()
    assert [p["holder"] for p in (await store.leave_pool(POOL, "d2", ONE)).admitted] == ["d3"]

"""The StateStore contract for pull heads (SPEC §15, supersession), on every backend.

A pull request's live head per backend is swapped in one step: of any number of
instances moving it at once, one learns each replaced head.
"""

from __future__ import annotations

import asyncio

from tests.stores.test_state_contract import TTL

from crcr.stores.state import StateStore

PULL = "org/up#7"


def _head(delivery: str, sha: str) -> dict[str, str]:
    return {"delivery_id": delivery, "head_sha": sha}


async def _move(
    store: StateStore, delivery: str, sha: str, repos: list[str], *, supersede: bool = True
) -> dict[str, dict[str, str]]:
    return await store.move_pull_heads(
        PULL, _head(delivery, sha), repos, supersede=supersede, ttl=TTL
    )


async def test_a_new_head_replaces_the_live_one_of_each_backend(store: StateStore) -> None:
    assert await _move(store, "d1", "a" * 40, ["org/x", "org/y"]) == {}
    replaced = await _move(store, "d2", "b" * 40, ["org/x", "org/y"])
    assert replaced == {"org/x": _head("d1", "a" * 40), "org/y": _head("d1", "a" * 40)}
    assert await _move(store, "d3", "c" * 40, ["org/x"]) == {"org/x": _head("d2", "b" * 40)}


async def test_a_redelivery_or_the_same_commit_replaces_nothing(store: StateStore) -> None:
    await _move(store, "d1", "a" * 40, ["org/x"])
    assert await _move(store, "d1", "a" * 40, ["org/x"]) == {}
    assert await _move(store, "d2", "a" * 40, ["org/x"]) == {}  # a reopen: same commit


async def test_a_head_that_does_not_supersede_still_becomes_live(store: StateStore) -> None:
    await _move(store, "d1", "a" * 40, ["org/x"])
    assert await _move(store, "d2", "b" * 40, ["org/x"], supersede=False) == {}
    assert await _move(store, "d3", "c" * 40, ["org/x"]) == {"org/x": _head("d2", "b" * 40)}


async def test_no_backends_is_no_step(store: StateStore) -> None:
    assert await _move(store, "d1", "a" * 40, []) == {}


async def test_two_instances_moving_at_once_learn_each_replaced_head_once(
    store: StateStore,
) -> None:
    await _move(store, "d0", "0" * 40, ["org/x"])
    answers = await asyncio.gather(
        *(_move(store, f"d{n}", f"{n:040d}", ["org/x"]) for n in range(1, 9))
    )
    replaced = [answer["org/x"]["delivery_id"] for answer in answers if answer]
    # Eight moves in some order: each replaced the one before it, none twice.
    assert len(replaced) == 8
    assert len(set(replaced)) == 8

"""The StateStore contract for pull heads (SPEC §15, supersession), on every backend.

A pull request's live head per backend is ordered and swapped in one step: of any
number of instances moving it at once, one learns each superseded head, and a newer
head stays live whichever step comes last. What a step superseded stays pending, with
a recovery deadline, until it is settled.
"""

from __future__ import annotations

import asyncio

from tests.stores.test_state_contract import TTL

from crcr.stores.roles.pull_heads import NewHead, SupersededHead, recovery_key
from crcr.stores.state import StateStore

PULL = "org/up#7"
A, B, C, D = ("a" * 40, "b" * 40, "c" * 40, "d" * 40)
RECOVER_AT = 1000.0


async def _move(
    store: StateStore,
    delivery: str,
    sha: str,
    repos: list[str],
    *,
    before: str = "",
    updated_at: str = "",
    supersede: bool = True,
) -> list[SupersededHead]:
    head = NewHead(delivery, sha, before=before, updated_at=updated_at)
    return await store.move_pull_heads(
        PULL, head, repos, supersede=supersede, ttl=TTL, recover_at=RECOVER_AT
    )


def _gone(repo: str, delivery: str, sha: str, by: str) -> SupersededHead:
    return SupersededHead(repo, delivery, sha, superseded_by=by)


async def _live(store: StateStore, repo: str) -> tuple[str, str]:
    head = (await store.pull_heads(PULL)).live[repo]
    return head["delivery_id"], head["head_sha"]


async def test_a_new_head_replaces_the_live_one_of_each_backend(store: StateStore) -> None:
    assert await _move(store, "d1", A, ["org/x", "org/y"]) == []
    replaced = await _move(store, "d2", B, ["org/x", "org/y"], before=A)
    assert replaced == [_gone("org/x", "d1", A, B), _gone("org/y", "d1", A, B)]
    assert await _move(store, "d3", C, ["org/x"], before=B) == [_gone("org/x", "d2", B, C)]
    assert await _live(store, "org/x") == ("d3", C)
    assert await _live(store, "org/y") == ("d2", B)


async def test_a_redelivery_or_the_same_commit_replaces_nothing(store: StateStore) -> None:
    await _move(store, "d1", A, ["org/x"])
    assert await _move(store, "d1", A, ["org/x"]) == []
    assert await _move(store, "d2", A, ["org/x"]) == []  # a reopen: same commit


async def test_a_head_that_does_not_supersede_still_becomes_live(store: StateStore) -> None:
    await _move(store, "d1", A, ["org/x"])
    assert await _move(store, "d2", B, ["org/x"], supersede=False) == []
    assert await _move(store, "d3", C, ["org/x"], before=B) == [_gone("org/x", "d2", B, C)]


async def test_no_backends_is_no_step(store: StateStore) -> None:
    assert await _move(store, "d1", A, []) == []


async def test_an_older_push_whose_step_comes_last_is_superseded_by_the_live_newer_one(
    store: StateStore,
) -> None:
    await _move(store, "d1", A, ["org/x", "org/y"])
    # Pushes A → B → C; C's fan-out finishes first.
    assert await _move(store, "d3", C, ["org/x", "org/y"], before=B) == [
        _gone("org/x", "d1", A, C),
        _gone("org/y", "d1", A, C),
    ]
    assert await _move(store, "d2", B, ["org/x", "org/y"], before=A) == [
        _gone("org/x", "d2", B, C),
        _gone("org/y", "d2", B, C),
    ]
    assert await _live(store, "org/x") == ("d3", C)
    # The chain goes on from the live head.
    assert await _move(store, "d4", D, ["org/x"], before=C) == [_gone("org/x", "d3", C, D)]


async def test_a_branch_pushed_back_to_a_superseded_commit_takes_it_back(
    store: StateStore,
) -> None:
    await _move(store, "d1", A, ["org/x"])
    await _move(store, "d2", B, ["org/x"], before=A)
    assert await _move(store, "d3", A, ["org/x"], before=B) == [_gone("org/x", "d2", B, A)]
    assert await _live(store, "org/x") == ("d3", A)


async def test_without_a_known_before_updated_at_orders_and_then_arrival(
    store: StateStore,
) -> None:
    await _move(store, "d1", A, ["org/x"], updated_at="2026-11-29T10:00:05Z")
    # A force-push whose `before` the relay never saw, stamped earlier: the older.
    older = await _move(store, "d2", B, ["org/x"], before=D, updated_at="2026-11-29T10:00:01Z")
    assert older == [_gone("org/x", "d2", B, A)]
    assert await _live(store, "org/x") == ("d1", A)
    # Same second, nothing known: the later step wins.
    later = await _move(store, "d3", C, ["org/x"], before=D, updated_at="2026-11-29T10:00:05Z")
    assert later == [_gone("org/x", "d1", A, C)]


async def test_what_a_step_superseded_stays_pending_until_settled(store: StateStore) -> None:
    await _move(store, "d1", A, ["org/x", "org/y"])
    assert await store.overdue(RECOVER_AT) == []
    superseded = await _move(store, "d2", B, ["org/x", "org/y"], before=A)

    heads = await store.pull_heads(PULL)
    assert list(heads.pending) == superseded
    assert A in heads.superseded and B not in heads.superseded
    assert await store.overdue(RECOVER_AT - 1) == []
    assert await store.overdue(RECOVER_AT) == [recovery_key(PULL)]

    await store.settle_pull_heads(PULL, superseded[:1])
    assert list((await store.pull_heads(PULL)).pending) == superseded[1:]
    assert await store.overdue(RECOVER_AT) == [recovery_key(PULL)]  # one left
    await store.settle_pull_heads(PULL, superseded[1:])
    assert list((await store.pull_heads(PULL)).pending) == []
    assert await store.overdue(RECOVER_AT) == []
    assert await _live(store, "org/x") == ("d2", B)  # settling moves no head


async def test_an_unknown_pull_reads_empty_and_settles_quietly(store: StateStore) -> None:
    heads = await store.pull_heads("org/up#404")
    assert (dict(heads.live), heads.superseded, list(heads.pending)) == ({}, frozenset(), [])
    await store.settle_pull_heads("org/up#404", [_gone("org/x", "d1", A, B)])


async def test_two_instances_moving_at_once_learn_each_replaced_head_once(
    store: StateStore,
) -> None:
    await _move(store, "d0", "0" * 40, ["org/x"])
    answers = await asyncio.gather(
        *(_move(store, f"d{n}", f"{n:040d}", ["org/x"]) for n in range(1, 9))
    )
    replaced = [head.delivery_id for answer in answers for head in answer]
    # Eight moves in some order: each replaced the one before it, none twice.
    assert len(replaced) == 8
    assert len(set(replaced)) == 8


async def test_two_racing_pushes_leave_the_newer_live_whichever_step_lands_last(
    store: StateStore,
) -> None:
    await _move(store, "d1", A, ["org/x"])
    answers = await asyncio.gather(
        _move(store, "d3", C, ["org/x"], before=B), _move(store, "d2", B, ["org/x"], before=A)
    )
    superseded = sorted((head.head_sha, head.superseded_by) for a in answers for head in a)
    assert superseded == [(A, C), (B, C)] or superseded == [(A, B), (B, C)]
    assert await _live(store, "org/x") == ("d3", C)

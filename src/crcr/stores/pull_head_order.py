"""Which of a pull request's heads is the newer (SPEC §15): the rule every state store
applies inside its one atomic pull-heads step (SQLite runs this module; the Redis script
in `stores/redis/pull_heads.py` mirrors it line for line).

Two `synchronize` deliveries of one PR can finish their fan-outs in either order, on
either instance. GitHub's `synchronize` payload says where the branch moved from
(`before`) and to (`after`), so a chain of pushes orders itself exactly:

1. the new head's `before` is the live head: the new one is newer (the common case);
2. the new head is already known superseded (a newer head named it as its `before`, or
   replaced it): it is the older;
3. otherwise the chain cannot tell (a force-push whose `before` never reached us, events
   lost or expired, three pushes racing whose middle one comes last):
   `pull_request.updated_at` decides when both carry one and they differ (GitHub bumps
   it on every push, to the second); failing that, the later store step wins, which is
   arrival order, as it was before heads were ordered.

A branch pushed back to an older commit moves from the live head (`before` = live), so
rule 1 takes it back even though its SHA was superseded once.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from crcr.stores.roles.pull_heads import NewHead, PullHeadsView, SupersededHead

SUPERSEDED_FIELD = "#superseded"
"""Beside the backends' heads (a repo's name never starts with '#'): the SHAs known older."""
PENDING_FIELD = "#pending"
"""Beside the backends' heads: supersessions whose follow-up is not yet confirmed done."""
KEEP_SUPERSEDED = 100
"""How many superseded SHAs a pull request remembers: pushes that race are close together."""


def is_newer(new: NewHead, live: Mapping[str, str], superseded: Collection[str]) -> bool:
    """Whether `new` is a newer head than `live`, given the PR's superseded SHAs."""
    if new.before and new.before == live.get("head_sha"):
        return True
    if new.head_sha in superseded:
        return False
    live_updated = live.get("updated_at", "")
    if new.updated_at and live_updated and new.updated_at != live_updated:
        return new.updated_at > live_updated  # same ISO-8601 shape: text order is time order
    return True


def is_newer_than_waiting(new: Mapping[str, str], waiting: Mapping[str, str]) -> bool:
    """`is_newer` between two heads waiting for one slot (`NewHead.order()` each): the
    waiting head's own `before` is the one SHA known superseded there."""
    head = NewHead("", new["head_sha"], new.get("before", ""), new.get("updated_at", ""))
    before = waiting.get("before", "")
    return is_newer(head, waiting, {before} if before else set())


def move_heads(
    state: dict[str, Any], new: NewHead, repos: Sequence[str], *, supersede: bool
) -> list[SupersededHead]:
    """Apply one pull-heads step to `state` (backend → head, plus the two fields above);
    return what it superseded, also appended to the pending ones."""
    known = list(state.get(SUPERSEDED_FIELD) or [])
    superseded: list[SupersededHead] = []
    went_live = False
    for repo in repos:
        live: Mapping[str, str] | None = state.get(repo)
        if (
            not supersede
            or live is None
            or live.get("delivery_id") == new.delivery_id
            or live.get("head_sha") == new.head_sha
        ):
            state[repo], went_live = new.stored(), True
        elif is_newer(new, live, known):
            superseded.append(
                SupersededHead(repo, live["delivery_id"], live["head_sha"], new.head_sha)
            )
            state[repo], went_live = new.stored(), True
        else:
            superseded.append(SupersededHead(repo, new.delivery_id, new.head_sha, live["head_sha"]))
    if supersede:
        older = [new.before] if new.before else []
        older += [head.head_sha for head in superseded]
        state[SUPERSEDED_FIELD] = remember(known, older, forget=new.head_sha if went_live else "")
    if superseded:
        pending = list(state.get(PENDING_FIELD) or [])
        state[PENDING_FIELD] = pending + [head.to_store() for head in superseded]
    return superseded


def remember(known: Sequence[str], older: Sequence[str], *, forget: str) -> list[str]:
    """The superseded SHAs once `older` joined them and `forget` (now live) left them,
    the latest `KEEP_SUPERSEDED` only."""
    kept = [sha for sha in known if sha != forget and sha not in older]
    kept += [sha for sha in dict.fromkeys(older) if sha != forget]
    return kept[-KEEP_SUPERSEDED:]


def settle(state: dict[str, Any], done: Sequence[SupersededHead]) -> bool:
    """Drop `done` from the pending supersessions; whether any are left."""
    finished = {(head.repo, head.delivery_id) for head in done}
    pending = [
        raw
        for raw in state.get(PENDING_FIELD) or []
        if (raw["repo"], raw["delivery_id"]) not in finished
    ]
    if pending:
        state[PENDING_FIELD] = pending
    else:
        state.pop(PENDING_FIELD, None)
    return bool(pending)


def view_of(state: Mapping[str, Any]) -> PullHeadsView:
    """What a stored state says: live heads by backend, superseded SHAs, pending ones."""
    return PullHeadsView(
        live={repo: head for repo, head in state.items() if not repo.startswith("#")},
        superseded=frozenset(state.get(SUPERSEDED_FIELD) or ()),
        pending=[SupersededHead.from_store(raw) for raw in state.get(PENDING_FIELD) or ()],
    )

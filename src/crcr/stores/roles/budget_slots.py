"""The budget-slots role (SPEC §15): a backend's concurrency cap, counted across instances.

A *pool* (one capped backend) has *holders* (dispatches sent and unfinished, each with
the jobs that reported on it) and a *line* of dispatches waiting for a slot, oldest
first, one place per PR. Every operation changes the pool and admits from the line in
one atomic step, so two instances can never both fill the last slot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class SlotChange:
    """What one operation did: who left the line for a slot, and who was replaced in it."""

    admitted: tuple[Mapping[str, Any], ...] = ()
    """The payloads (as joined) of the dispatches that now hold a slot and must be sent."""
    replaced: tuple[Mapping[str, Any], ...] = ()
    """Waiting payloads taken out of line unsent: replaced by a newer one at the same
    place, or (`leave_pool`) the leaver's own."""


@dataclass(frozen=True)
class PoolView:
    """A pool as the backend page shows it: who runs, who waits (oldest first)."""

    running: Mapping[str, float] = field(default_factory=dict)
    """holder → epoch seconds at which it stops counting unless a job reports."""
    waiting: Sequence[tuple[str, Mapping[str, Any]]] = ()
    """(place, payload), in the order they will go."""


@dataclass(frozen=True)
class SlotTerms:
    """The terms every operation on a pool is made under."""

    limit: int
    """Holders at most: the entry's `max_concurrent` now (it may change between calls)."""
    hold_for: float
    """Seconds a holder counts without news of a job (`CRCR_ZOMBIE_TIMEOUT`)."""
    ttl: int
    """Seconds the pool's record lives after its last change."""


class BudgetSlots(Protocol):
    """Capped pools of dispatch slots, each with its waiting line."""

    async def join_pool(
        self,
        pool: str,
        place: str,
        holder: str,
        payload: Mapping[str, Any],
        terms: SlotTerms,
        order: Mapping[str, str] | None = None,
    ) -> SlotChange:
        """Queue `holder` at `place` (a waiter at the same place is replaced, keeping its
        position), then admit from the head of the line while slots are free.

        A `holder` that holds a slot already is not queued again (a redelivery). With an
        `order` (`NewHead.order()`: a PR's pushes), a waiter queued with one of its own is
        replaced only by a newer head (`pull_head_order.is_newer_than_waiting`): an older
        one that arrives late is turned away, its own payload in `replaced`.
        """

    async def note_job(
        self, pool: str, holder: str, job: str, *, finished: bool, terms: SlotTerms
    ) -> SlotChange:
        """A job of `holder` reported: started (it keeps the slot) or finished (once no
        job of it is unfinished, the slot frees); then admit while slots are free.

        A holder without a slot (never capped, or freed already) changes nothing.
        """

    async def leave_pool(self, pool: str, holder: str, terms: SlotTerms) -> SlotChange:
        """`holder` gives up its slot or its place in line (superseded), then admit."""

    async def refill_pool(self, pool: str, terms: SlotTerms) -> SlotChange:
        """Drop holders whose time ran out, then admit while slots are free (the sweeper)."""

    async def pool_view(self, pool: str) -> PoolView:
        """The pool as it stands; reads only."""

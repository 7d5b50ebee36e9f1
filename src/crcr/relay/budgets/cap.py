"""`max_concurrent` (SPEC §15): a capped backend is sent at most N unfinished dispatches.

A dispatch to a capped backend joins the backend's pool in the state store; the pool
admits it at once when a slot is free, else it waits in line (oldest first; a newer
head of the same PR takes over its older head's place, and an older push whose webhook
comes late is turned away rather than take the newer one's) and is sent when a slot frees:
every job that reported on a holder has completed, or the holder's time
(`CRCR_ZOMBIE_TIMEOUT`, renewed by each report) ran out. Admission is atomic in the
store, so instances sharing it never exceed the cap together.

Only dispatches that start work are rationed: a `closed` pull request starts nothing
and, if it took a slot, would hold it for hours with no report to free it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from crcr.relay.allowlist.model import Allowlist, AllowlistEntry
from crcr.relay.budgets.entries import capped_entries
from crcr.relay.budgets.supersession import new_head, supersedes_heads
from crcr.relay.jobs.dispatch import DispatchRecord, DispatchStatus, UpstreamContext
from crcr.relay.jobs.events import JobTransitioned
from crcr.relay.jobs.lifecycle import JobState
from crcr.relay.webhook.fanout import DISPATCH_QUEUE, DispatchOutcome, FanOut, Result
from crcr.stores.roles import BudgetSlots
from crcr.stores.roles.budget_slots import SlotChange, SlotTerms

log = logging.getLogger(__name__)

UNRATIONED_ACTIONS = frozenset({"closed"})
"""Pull request actions whose dispatch starts no work downstream."""


def head_order(waiting: Waiting) -> dict[str, str] | None:
    """What orders a pushed head against the one waiting in its place; None for events
    that are not a PR's push (they replace a waiter in arrival order)."""
    if not supersedes_heads(waiting.context):
        return None
    upstream = waiting.client_payload.get("payload")
    found = upstream if isinstance(upstream, Mapping) else {}
    return new_head(waiting.delivery_id, waiting.context, found).order()


def pool_of(repo: str) -> str:
    """The pool a backend's dispatches are counted in (repo names ignore case)."""
    return repo.lower()


def place_of(context: UpstreamContext, delivery_id: str) -> str:
    """Where a dispatch waits: one place per PR (a newer head takes it over)."""
    if context.pr_number:
        return f"{context.upstream_repo.lower()}#{context.pr_number}"
    return f"delivery:{delivery_id}"


@dataclass(frozen=True)
class Waiting:
    """A dispatch as it waits in line: everything needed to send it later."""

    delivery_id: str
    repo: str
    context: UpstreamContext
    client_payload: Mapping[str, Any]
    trimmed: bool

    def to_store(self) -> dict[str, Any]:
        """The JSON-able form kept in the pool."""
        context = {f.name: getattr(self.context, f.name) for f in fields(self.context)}
        context["labels"] = list(self.context.labels)
        return {
            "delivery_id": self.delivery_id,
            "repo": self.repo,
            "context": context,
            "client_payload": dict(self.client_payload),
            "trimmed": self.trimmed,
        }

    @classmethod
    def from_store(cls, raw: Mapping[str, Any]) -> Waiting:
        """Rebuild one from the pool."""
        context = dict(raw["context"])
        context["labels"] = tuple(context.get("labels") or ())
        return cls(
            str(raw["delivery_id"]),
            str(raw["repo"]),
            UpstreamContext(**context),
            raw["client_payload"],
            bool(raw.get("trimmed")),
        )


class DispatchCap:
    """Ration capped backends' dispatches through their pools."""

    def __init__(
        self,
        store: BudgetSlots,
        fanout: FanOut,
        allowlist: Callable[[], Awaitable[Allowlist]],
        *,
        hold_for: float,
        ttl: int,
    ) -> None:
        self._store = store
        self._fanout = fanout
        self._allowlist = allowlist
        self._hold_for = hold_for
        self._ttl = ttl
        self.nudge: Callable[[], None] | None = None
        """Wakes the sweeper when a dispatch is queued for it (set once it exists)."""

    def terms(self, entry: AllowlistEntry) -> SlotTerms:
        """The pool terms under the entry's cap now."""
        return SlotTerms(int(entry.budget.max_concurrent or 0), self._hold_for, self._ttl)

    async def ration(
        self,
        allowlist: Allowlist,
        waiting: Waiting,
        repos: Sequence[str],
    ) -> tuple[list[str], list[str]]:
        """Split `repos` (this event's targets) into (sent now by the caller, waiting).

        Each capped repo's pool is joined; older waiters of its line admitted meanwhile
        are handed to the dispatch queue, each with its own payload. A push found older
        than the one waiting in its place is neither: it is never sent (the newer head's
        supersession step closes nothing for it, as it has no dispatch record).
        """
        if waiting.context.action in UNRATIONED_ACTIONS:
            await self._drop_closed(allowlist, waiting, repos)
            return list(repos), []
        send_now: list[str] = []
        held_back: list[str] = []
        order = head_order(waiting)
        for repo in repos:
            entry = allowlist.entry(repo)
            if entry is None or entry.budget.max_concurrent is None:
                send_now.append(repo)
                continue
            mine = Waiting(
                waiting.delivery_id, repo, waiting.context, waiting.client_payload, waiting.trimmed
            )
            change = await self._store.join_pool(
                pool_of(repo),
                place_of(waiting.context, waiting.delivery_id),
                waiting.delivery_id,
                mine.to_store(),
                self.terms(entry),
                order,
            )
            admitted = [Waiting.from_store(raw) for raw in change.admitted]
            if any(w.delivery_id == waiting.delivery_id for w in admitted):
                send_now.append(repo)
            elif any(raw.get("delivery_id") == waiting.delivery_id for raw in change.replaced):
                log.info(
                    "an older head is not queued behind a newer one",
                    extra={"delivery_id": waiting.delivery_id, "repo": repo},
                )
            else:
                held_back.append(repo)
            await self._send([w for w in admitted if w.delivery_id != waiting.delivery_id])
        return send_now, held_back

    async def _drop_closed(
        self, allowlist: Allowlist, closing: Waiting, repos: Sequence[str]
    ) -> None:
        """A closed PR's head still waiting for a slot is taken out of line, never sent."""
        place = place_of(closing.context, closing.delivery_id)
        for repo in repos:
            entry = allowlist.entry(repo)
            if entry is None or entry.budget.max_concurrent is None:
                continue
            view = await self._store.pool_view(pool_of(repo))
            for waiting_place, payload in view.waiting:
                if waiting_place == place:
                    holder = str(payload["delivery_id"])
                    await self._admitted(
                        await self._store.leave_pool(pool_of(repo), holder, self.terms(entry))
                    )

    async def on_job(self, event: JobTransitioned) -> None:
        """A hook on every job transition: a finished job may free its dispatch's slot."""
        job = event.job
        allowlist = await self._allowlist()
        entry = allowlist.entry(job.verified_repo)
        if entry is None or entry.budget.max_concurrent is None:
            return
        finished = job.state in (JobState.COMPLETED, JobState.TIMED_OUT, JobState.SUPERSEDED)
        change = await self._store.note_job(
            pool_of(entry.repo),
            job.dispatch.delivery_id,
            job.key,
            finished=finished,
            terms=self.terms(entry),
        )
        await self._admitted(change)

    async def refill(self) -> None:
        """A sweeper step: holders whose time ran out free their slots; the line moves."""
        allowlist = await self._allowlist()
        for entry in capped_entries(allowlist):
            await self._admitted(
                await self._store.refill_pool(pool_of(entry.repo), self.terms(entry))
            )

    async def leave(self, repo: str, delivery_id: str) -> None:
        """A dispatch no longer counts (superseded, or failed for good): the line moves."""
        allowlist = await self._allowlist()
        entry = allowlist.entry(repo)
        if entry is None or entry.budget.max_concurrent is None:
            return
        change = await self._store.leave_pool(pool_of(repo), delivery_id, self.terms(entry))
        await self._admitted(change)

    async def _admitted(self, change: SlotChange) -> None:
        await self._send([Waiting.from_store(raw) for raw in change.admitted])

    async def _send(self, admitted: Sequence[Waiting]) -> None:
        """Hand each admitted dispatch to the durable dispatch queue, its record first.

        Queued rather than sent here: the hook or sweeper step that freed the slot may be
        cut short, and a dispatch that holds a slot must not be lost with it.
        """
        for waiting in admitted:
            record = DispatchRecord(
                delivery_id=waiting.delivery_id,
                repo=waiting.repo,
                status=DispatchStatus.PENDING,
                context=waiting.context,
                sent_at=time.time(),
                trimmed=waiting.trimmed,
            )
            store = self._fanout.store
            fresh = {waiting.repo: record.to_store()}
            if not await store.put_dispatches(waiting.delivery_id, fresh, self._ttl):
                continue  # sent before (a redelivered webhook): nothing to do
            # The item shape `crcr.relay.webhook.fanout.redeliver_dispatch` reads.
            await store.enqueue(
                DISPATCH_QUEUE,
                f"{waiting.delivery_id}:{waiting.repo}",
                {
                    "delivery_id": waiting.delivery_id,
                    "repo": waiting.repo,
                    "event_type": waiting.context.event_type,
                    "client_payload": dict(waiting.client_payload),
                },
            )
            log.info(
                "waiting dispatch admitted as a slot freed",
                extra={"delivery_id": waiting.delivery_id, "repo": waiting.repo},
            )
        if admitted and self.nudge is not None:
            self.nudge()

    async def settle(self, delivery_id: str, outcomes: Sequence[DispatchOutcome]) -> None:
        """After a fan-out: a dispatch GitHub refused for good frees its slot."""
        for outcome in outcomes:
            if outcome.result is Result.FAILED:
                await self.leave(outcome.repo, delivery_id)

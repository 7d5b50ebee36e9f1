"""Supersession (SPEC §15): a PR's new head makes the previous head's unfinished jobs
`superseded`, backend by backend.

After a `pull_request` fan-out, the PR's live head per backend moves to this one in one
atomic store step (`PullHeads`); only a `synchronize` supersedes, and only the instance
whose step returned a superseded head acts on it, so two instances sharing the store
make one `crcr_cancel` and one cancelled check run per superseded dispatch.

Two synchronizes whose fan-outs finish out of order are ordered in that same step by
the payloads' `before` (the head the branch moved from) and `pull_request.updated_at`
(`stores.pull_head_order`): the newer head stays live whichever step runs last, and the
older one is superseded, be it the live head or the one just sent. When neither tells
(a force-push whose `before` never reached the relay, within one second), the later
step wins.

The step also keeps what it superseded as pending, with a deadline (`RECOVERY_GRACE`
on): the follow-up below settles it, and if the relay dies first, the sweeper's
deadline handler (`recover`) runs the follow-up again, on any instance. Every step of
it may run twice: the record update writes the same values, the `crcr_cancel`'s record
claims it once, job transitions are compare-and-set. A job still running at its zombie
timeout whose pending record is gone (lost, or expired with the PR's heads) is still
found by `finalise_overdue`: its head is known superseded, so it is superseded, not
timed out.

For each superseded head whose dispatch is unfinished:

- its dispatch record is closed (`superseded`, with the new head's SHA) and frees its
  `max_concurrent` slot;
- a `crcr_cancel` dispatch (`client_payload.cancel = {"delivery_id", "head_sha"}`) goes
  through the fan-out, so a failed send waits in the durable dispatch queue;
- each of its jobs still running moves to SUPERSEDED: the HUD row says superseded (and
  counts nowhere), the hooks conclude its L3/L4 check run `cancelled`.

Late callbacks are then accepted against the closed record and carry its SHA to the HUD.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from crcr.relay.jobs.dispatch import (
    CANCEL_EVENT,
    RELAY_OWN_EVENTS,
    DispatchRecord,
    DispatchStatus,
    UpstreamContext,
)
from crcr.relay.jobs.events import JobHook
from crcr.relay.jobs.job import Job, JobSupersession
from crcr.relay.jobs.lifecycle import SUPERSEDE_FROM, JobState
from crcr.relay.results.body import elapsed, payload_for_supersession
from crcr.relay.results.forwarder import HudForwarder
from crcr.relay.results.job_finish import JobFinish
from crcr.relay.webhook.client_payload import build_client_payload
from crcr.relay.webhook.fanout import FanOut, dispatch_to_downstreams
from crcr.stores.roles import Dispatches, JobStates, PullHeads
from crcr.stores.roles.pull_heads import RECOVERY_PREFIX, NewHead, SupersededHead, pull_key

log = logging.getLogger(__name__)

LIVE_HEAD_ACTIONS = frozenset({"opened", "reopened", "synchronize"})
"""Pull request actions whose head becomes the live one (`closed` starts nothing)."""
SUPERSEDING_ACTION = "synchronize"
"""The one action that supersedes the head it replaces: a new commit on the PR."""
CANCEL_PREFIX = "crcr-cancel-"
"""A `crcr_cancel` dispatch's delivery id: this prefix and the superseded delivery's id,
so that each superseded dispatch has one cancel record (its put claims it once)."""
FINISHED = frozenset({JobState.COMPLETED, JobState.TIMED_OUT, JobState.SUPERSEDED})
RECOVERY_GRACE = 60.0
"""Seconds after a pull-heads step before the sweeper finishes its supersessions itself:
far beyond the follow-up's own time (milliseconds), so that it normally settles first."""


class SupersessionStore(PullHeads, Dispatches, JobStates, Protocol):
    """The state store's roles this module uses."""


def pull_of(context: UpstreamContext) -> str:
    """The key a PR's live heads are kept under."""
    return pull_key(context.upstream_repo, context.pr_number or 0)


def supersedes_heads(context: UpstreamContext) -> bool | None:
    """Whether this dispatch supersedes its PR's live heads (True), only becomes the live
    head (False), or has nothing to do with heads (None: pushes, relay-own events, …)."""
    if context.event_type != "pull_request" or not context.pr_number:
        return None
    if context.action not in LIVE_HEAD_ACTIONS:
        return None
    return context.action == SUPERSEDING_ACTION


def new_head(delivery_id: str, context: UpstreamContext, payload: Mapping[str, Any]) -> NewHead:
    """This dispatch's head, with what orders it: a synchronize's `before` and the pull
    request's `updated_at` (GitHub sends both; either may be missing or malformed)."""
    before = payload.get("before") if context.action == SUPERSEDING_ACTION else None
    pull_request = payload.get("pull_request")
    updated_at = pull_request.get("updated_at") if isinstance(pull_request, Mapping) else None
    return NewHead(
        delivery_id,
        context.head_sha,
        before=before if isinstance(before, str) else "",
        updated_at=updated_at if isinstance(updated_at, str) else "",
    )


def cancel_payload(record: DispatchRecord, cancel_id: str) -> dict[str, object]:
    """The `crcr_cancel` client payload: SPEC §4's envelope plus SPEC §15's `cancel`."""
    context = record.context
    upstream = {
        "repository": {"full_name": context.upstream_repo},
        "pull_request": {"number": context.pr_number, "head": {"sha": context.head_sha}},
    }
    envelope = build_client_payload(CANCEL_EVENT, cancel_id, upstream).value
    return {
        **envelope,
        "cancel": {"delivery_id": record.delivery_id, "head_sha": context.head_sha},
    }


def unfinished(jobs: Sequence[JobState]) -> bool:
    """Whether a dispatch with these jobs known is still at work: no job reported yet
    (it may be queued downstream), or one has not ended."""
    return not jobs or any(state not in FINISHED for state in jobs)


@dataclass
class Supersession:
    """The fan-out's follow-up for pull requests: move live heads, supersede old ones."""

    store: SupersessionStore
    fanout: FanOut
    forwarder: HudForwarder
    record_ttl: int
    hook_budget: float
    hooks: list[JobHook] = field(default_factory=list)
    """Run for each job superseded, as for a callback's transition (check runs, caps)."""
    leave_cap: Callable[[str, str], Awaitable[None]] | None = None
    """(repo, delivery id): a superseded dispatch frees its `max_concurrent` slot."""
    clock: Callable[[], float] = time.time

    async def dispatched(
        self,
        delivery_id: str,
        context: UpstreamContext,
        repos: Sequence[str],
        payload: Mapping[str, Any] | None = None,
    ) -> int:
        """After a fan-out sent (or queued) this head to `repos`: it is their live head
        now, unless a newer one is; returns how many dispatches it superseded.

        One store step moves every backend's head; only a superseding synchronize costs
        more: per superseded delivery (usually one: the previous head, sent to every
        backend) one read of its records, one write and one `crcr_cancel` fan-out, per
        superseded backend one read of its dispatch's job list, and one step to settle.
        """
        supersede = supersedes_heads(context)
        if supersede is None or not repos:
            return 0
        pull = pull_of(context)
        superseded = await self.store.move_pull_heads(
            pull,
            new_head(delivery_id, context, payload or {}),
            repos,
            supersede=supersede,
            ttl=self.record_ttl,
            recover_at=self.clock() + RECOVERY_GRACE,
        )
        if not superseded:
            return 0
        closed = await self._follow_up(superseded)
        await self.store.settle_pull_heads(pull, superseded)
        return closed

    async def recover(self, key: str, now: float) -> bool:
        """The deadline handler of `RECOVERY_PREFIX` keys: redo the follow-up of a pull's
        pending supersessions, whose relay died (or is slow) before settling them."""
        pull = key.removeprefix(RECOVERY_PREFIX)
        pending = list((await self.store.pull_heads(pull)).pending)
        if pending:
            log.warning("finishing %d supersession(s) of %s left pending", len(pending), pull)
            await self._follow_up(pending)
            await self.store.settle_pull_heads(pull, pending)
        return True

    async def _follow_up(self, superseded: Sequence[SupersededHead]) -> int:
        """Close the unfinished dispatches of `superseded`; how many were closed."""
        groups: dict[tuple[str, str], list[str]] = {}
        for head in sorted(superseded, key=lambda head: head.repo):
            groups.setdefault((head.delivery_id, head.superseded_by), []).append(head.repo)
        closed = 0
        for (old_delivery, newer), old_repos in groups.items():
            records = await self.store.get_dispatches(old_delivery, old_repos)
            group = []
            for repo in old_repos:
                found = await self._closable(records.get(repo), newer)
                if found is not None:
                    group.append(found)
            if group:
                await self._close(old_delivery, group, newer)
                closed += len(group)
        return closed

    async def _closable(
        self, raw: Mapping[str, Any] | None, newer: str
    ) -> tuple[DispatchRecord, list[Job]] | None:
        """The dispatch and its reported jobs, unless it is gone, failed, finished, or
        closed for another head (closed for this one: a follow-up is being redone)."""
        if raw is None:
            return None  # never sent: it waited in line and the newer head took its place
        record = DispatchRecord.from_store(raw)
        own = record.context.event_type in RELAY_OWN_EVENTS
        if own or record.status is DispatchStatus.FAILED:
            return None
        if record.superseded_by not in (None, newer):
            return None
        jobs = await self._jobs_of(record)
        return (record, jobs) if unfinished([job.state for job in jobs]) else None

    async def _close(
        self, delivery_id: str, group: list[tuple[DispatchRecord, list[Job]]], new_sha: str
    ) -> int:
        """Close one delivery's dispatches to these backends for `new_sha`: records,
        `crcr_cancel`s, slots, then each running job; how many jobs it superseded.

        In this order, so that a follow-up redone after a crash finds the dispatch still
        unfinished (its jobs still running) until its cancel was sent."""
        changes = {"status": str(DispatchStatus.SUPERSEDED), "superseded_by": new_sha}
        closed = [(record.superseded(new_sha), jobs) for record, jobs in group]
        await self.store.update_dispatches(
            delivery_id, {record.repo: changes for record, _ in closed}, self.record_ttl
        )
        log.info(
            "dispatch superseded by %s",
            new_sha[:7],
            extra={"delivery_id": delivery_id, "repos": [record.repo for record, _ in closed]},
        )
        await self._cancel([record for record, _ in closed])
        superseded = 0
        for record, jobs in closed:
            if self.leave_cap is not None:
                await self.leave_cap(record.repo, delivery_id)
            for job in jobs:
                if job.state is JobState.IN_PROGRESS:
                    superseded += await self.supersede_job(job, record)
        return superseded

    async def supersede_job(self, job: Job, closed: DispatchRecord) -> bool:
        """Move one running job to SUPERSEDED, its HUD row and hooks with it (as the
        sweeper's timeout does); False if it moved on."""
        now = self.clock()
        supersession = JobSupersession(closed)
        finish = JobFinish(
            self.store,
            self.forwarder,
            self.hooks,
            self.hook_budget,
            self.record_ttl,
            source="supersession",
        )
        return await finish.finish(
            job.superseded(supersession),
            supersession.to_record(),
            allowed_from=SUPERSEDE_FROM,
            callback_payload=payload_for_supersession(job.callback, at=now),
            execution_time=elapsed(now, job.in_progress_at),
            item_id=f"superseded:{job.key}",
            untrack=True,  # never a zombie: the sweeper has nothing left to time out
        )

    async def _jobs_of(self, record: DispatchRecord) -> list[Job]:
        """The jobs of this dispatch that reported, at every level: each one's
        `in_progress` transition listed it under the dispatch (`jobs_list`)."""
        jobs = []
        for key in await self.store.listed_jobs(record.jobs_list):
            job = Job.readable(key, await self.store.get_job(key))
            if job is not None and job.dispatch.delivery_id == record.delivery_id:
                jobs.append(job)
        return jobs

    async def _cancel(self, closed: Sequence[DispatchRecord]) -> None:
        """Tell the downstreams they may cancel: once per superseded dispatch (the cancel
        record's put claims it), retried from the dispatch queue when GitHub fails it.
        `closed` share one delivery, so one payload serves them all."""
        first = closed[0]
        cancel_id = f"{CANCEL_PREFIX}{first.delivery_id}"
        context = UpstreamContext(
            first.context.upstream_repo,
            CANCEL_EVENT,
            first.context.head_sha,
            first.context.pr_number,
        )
        await dispatch_to_downstreams(
            self.fanout,
            delivery_id=cancel_id,
            context=context,
            client_payload=cancel_payload(first, cancel_id),
            trimmed=False,
            repos=[record.repo for record in closed],
        )

    async def finalise_overdue(self, job: Job) -> bool:
        """The sweeper's question before it times a job out: was its dispatch superseded
        meanwhile, or is its head known older than its backend's live one (a follow-up
        that never ran)? Then the job is superseded, never a `timed_out` failure that
        counts. Only pull request jobs cost store reads."""
        if supersedes_heads(job.dispatch.context) is None:
            return False
        raw = await self.store.get_dispatch(job.dispatch.delivery_id, job.dispatch.repo)
        if raw is None:
            return False
        record = DispatchRecord.from_store(raw)
        if record.superseded_by is not None:
            return await self.supersede_job(job, record)
        newer = await self._newer_live_head(record)
        if newer is None:
            return False
        return await self._close(record.delivery_id, [(record, [job])], newer) > 0

    async def _newer_live_head(self, record: DispatchRecord) -> str | None:
        """The SHA of the live head that superseded `record`'s, if the store knows one."""
        heads = await self.store.pull_heads(pull_of(record.context))
        live = heads.live.get(record.repo)
        if live is None or record.context.head_sha not in heads.superseded:
            return None
        if live.get("delivery_id") == record.delivery_id:
            return None
        newer = live.get("head_sha")
        return newer if newer and newer != record.context.head_sha else None

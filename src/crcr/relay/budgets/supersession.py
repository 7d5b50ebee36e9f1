"""Supersession (SPEC §15): a PR's new head makes the previous head's unfinished jobs
`superseded`, backend by backend.

After a `pull_request` fan-out, the PR's live head per backend moves to this one in one
atomic store step (`PullHeads`); only a `synchronize` supersedes what it replaces, and
only the instance whose step returned a replaced head acts on it, so two instances
sharing the store make one `crcr_cancel` and one cancelled check run per superseded
dispatch. For each replaced head whose dispatch is unfinished:

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
from crcr.relay.jobs.events import JobHook, JobTransitioned, run_hooks
from crcr.relay.jobs.expectation import HudExpectation
from crcr.relay.jobs.job import Job, JobSupersession
from crcr.relay.jobs.lifecycle import SUPERSEDE_FROM, JobState, store_states
from crcr.relay.results.body import elapsed, job_hud_body, payload_for_supersession
from crcr.relay.results.forwarder import HudForwarder
from crcr.relay.webhook.client_payload import build_client_payload
from crcr.relay.webhook.fanout import FanOut, dispatch_to_downstreams
from crcr.stores.roles import Dispatches, JobStates, JobSummaries, PullHeads

log = logging.getLogger(__name__)

LIVE_HEAD_ACTIONS = frozenset({"opened", "reopened", "synchronize"})
"""Pull request actions whose head becomes the live one (`closed` starts nothing)."""
SUPERSEDING_ACTION = "synchronize"
"""The one action that supersedes the head it replaces: a new commit on the PR."""
CANCEL_PREFIX = "crcr-cancel-"
"""A `crcr_cancel` dispatch's delivery id: this prefix and the superseded delivery's id,
so that each superseded dispatch has one cancel record (its put claims it once)."""
FINISHED = frozenset({JobState.COMPLETED, JobState.TIMED_OUT, JobState.SUPERSEDED})


class SupersessionStore(PullHeads, Dispatches, JobSummaries, JobStates, Protocol):
    """The state store's roles this module uses."""


def pull_of(context: UpstreamContext) -> str:
    """The key a PR's live heads are kept under."""
    return f"{context.upstream_repo.lower()}#{context.pr_number}"


def supersedes_heads(context: UpstreamContext) -> bool | None:
    """Whether this dispatch supersedes its PR's live heads (True), only becomes the live
    head (False), or has nothing to do with heads (None: pushes, relay-own events, …)."""
    if context.event_type != "pull_request" or not context.pr_number:
        return None
    if context.action not in LIVE_HEAD_ACTIONS:
        return None
    return context.action == SUPERSEDING_ACTION


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
        self, delivery_id: str, context: UpstreamContext, repos: Sequence[str]
    ) -> int:
        """After a fan-out sent (or queued) this head to `repos`: it is their live head
        now; returns how many dispatches it superseded.

        One store step moves every backend's head; only a superseding synchronize costs
        more: per replaced delivery (usually one: the previous head, sent to every
        backend) one read of its records, one write and one `crcr_cancel` fan-out, and
        per replaced backend one read of its head's job summaries.
        """
        supersede = supersedes_heads(context)
        if supersede is None or not repos:
            return 0
        spelled = {repo.lower(): repo for repo in repos}
        head = {"delivery_id": delivery_id, "head_sha": context.head_sha}
        replaced = await self.store.move_pull_heads(
            pull_of(context), head, list(spelled), supersede=supersede, ttl=self.record_ttl
        )
        by_delivery: dict[str, list[str]] = {}
        for repo, old in sorted(replaced.items()):
            by_delivery.setdefault(old["delivery_id"], []).append(spelled.get(repo, repo))
        closing: dict[str, list[tuple[DispatchRecord, list[Job]]]] = {}
        for old_delivery, old_repos in by_delivery.items():
            records = await self.store.get_dispatches(old_delivery, old_repos)
            for repo in old_repos:
                found = await self._closable(records.get(repo))
                if found is not None:
                    closing.setdefault(old_delivery, []).append(found)
        for old_delivery, group in closing.items():
            await self._close(old_delivery, group, context.head_sha)
        return sum(len(group) for group in closing.values())

    async def _closable(
        self, raw: Mapping[str, Any] | None
    ) -> tuple[DispatchRecord, list[Job]] | None:
        """The dispatch and its reported jobs, unless it is gone, failed or finished."""
        if raw is None:
            return None  # never sent: it waited in line and the newer head took its place
        record = DispatchRecord.from_store(raw)
        own = record.context.event_type in RELAY_OWN_EVENTS
        if own or record.status is DispatchStatus.FAILED or record.superseded_by is not None:
            return None
        jobs = await self._jobs_of(record)
        return (record, jobs) if unfinished([job.state for job in jobs]) else None

    async def _close(
        self, delivery_id: str, group: list[tuple[DispatchRecord, list[Job]]], new_sha: str
    ) -> None:
        """Close one delivery's dispatches to these backends for `new_sha`: records,
        `crcr_cancel`s, slots, then each running job."""
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
        for record, jobs in closed:
            if self.leave_cap is not None:
                await self.leave_cap(record.repo, delivery_id)
            for job in jobs:
                if job.state is JobState.IN_PROGRESS:
                    await self.supersede_job(job, record)

    async def supersede_job(self, job: Job, closed: DispatchRecord) -> bool:
        """Move one running job to SUPERSEDED: its HUD row first (queued, as the sweeper's
        timeout does), then the transition, then the hooks; False if it moved on."""
        now = self.clock()
        supersession = JobSupersession(closed)
        done = job.superseded(supersession)
        hud_body = job_hud_body(
            done,
            execution_time=elapsed(now, job.in_progress_at),
            callback_payload=payload_for_supersession(job.callback, at=now),
        )
        expect = HudExpectation.of(done)
        await self.forwarder.enqueue(hud_body, expect=expect, item_id=f"superseded:{job.key}")
        transition = await self.store.transition_job_and_deadline(
            job.key,
            allowed_from=store_states(SUPERSEDE_FROM),
            new=supersession.to_record(),
            ttl=self.record_ttl,
            deadline=None,  # never a zombie: the sweeper has nothing left to time out
        )
        if not transition.applied:
            return False
        event = JobTransitioned(done, hud_body, source="supersession")
        await run_hooks(self.hooks, event, budget=self.hook_budget)
        return True

    async def _jobs_of(self, record: DispatchRecord) -> list[Job]:
        """The jobs of this dispatch that reported, as far as the store lists them (the
        job summaries of its head and repo, kept for every L3/L4 job)."""
        summaries = await self.store.job_summaries(record.context.head_sha, record.repo)
        jobs = []
        for key in summaries:
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
        meanwhile? Then the job is superseded, never a `timed_out` failure that counts.
        Only pull request jobs cost a store read."""
        if supersedes_heads(job.dispatch.context) is None:
            return False
        raw = await self.store.get_dispatch(job.dispatch.delivery_id, job.dispatch.repo)
        if raw is None:
            return False
        record = DispatchRecord.from_store(raw)
        if record.superseded_by is None:
            return False
        return await self.supersede_job(job, record)

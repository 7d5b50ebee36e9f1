"""Ending a running job on the relay's own word (the sweeper's timeout, SPEC §7; a newer
head's supersession, SPEC §15): queue the HUD row, then move the job, then run the hooks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from crcr.relay.jobs.events import JobHook, JobTransitioned, run_hooks
from crcr.relay.jobs.expectation import HudExpectation
from crcr.relay.jobs.job import Job
from crcr.relay.jobs.lifecycle import JobState, store_states
from crcr.relay.results.body import job_hud_body
from crcr.relay.results.forwarder import HudForwarder
from crcr.stores.roles import JobStates
from crcr.stores.values import JobRecord


@dataclass(frozen=True)
class JobFinish:
    """One way of ending running jobs: where it writes, and what it runs after."""

    store: JobStates
    forwarder: HudForwarder
    hooks: Sequence[JobHook]
    hook_budget: float
    ttl: int
    source: Literal["sweeper", "supersession"]

    async def finish(
        self,
        done: Job,
        record: JobRecord,
        *,
        allowed_from: frozenset[JobState | None],
        callback_payload: Mapping[str, Any],
        execution_time: float | None,
        item_id: str,
        untrack: bool,
    ) -> bool:
        """Move a job to `done` (`record` merged over its own) if it is still in
        `allowed_from`, its HUD row and hooks with it; False if it moved on meanwhile.

        The row is queued *before* the transition: a crash in between leaves a queued
        body that the queue handler drops as stale (`expect` no longer holds) rather
        than a finished job whose HUD row was never written. `untrack` takes the job off
        the deadline list in the transition's own round trip (whatever its outcome);
        without it the caller keeps the deadline, to look again.
        """
        hud_body = job_hud_body(
            done, execution_time=execution_time, callback_payload=callback_payload
        )
        await self.forwarder.enqueue(hud_body, expect=HudExpectation.of(done), item_id=item_id)
        states = store_states(allowed_from)
        if untrack:
            transition = await self.store.transition_job_and_deadline(
                done.key, allowed_from=states, new=record, ttl=self.ttl, deadline=None
            )
        else:
            transition = await self.store.transition_job(
                done.key, allowed_from=states, new=record, ttl=self.ttl
            )
        if not transition.applied:
            return False
        event = JobTransitioned(done, hud_body, source=self.source)
        await run_hooks(self.hooks, event, budget=self.hook_budget)
        return True

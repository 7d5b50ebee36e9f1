"""The sweeper's first step: time out zombie jobs and redo completions whose relay died.

Every step is safe to run twice or concurrently: a job is finalised by an atomic
transition, and its HUD body is queued before the transition (`results.job_finish`).

The deadline list also holds other components' timers under a key prefix of their own
(the check publisher's watches over open check runs, SPEC §10.2): a due key with such a
prefix goes to its `DeadlineHandler` instead.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from crcr.relay.jobs.events import JobHook, JobTransitioned, run_hooks
from crcr.relay.jobs.expectation import HudExpectation
from crcr.relay.jobs.job import Job, JobTimeout
from crcr.relay.jobs.lifecycle import TIMEOUT_FROM, JobState
from crcr.relay.results.body import elapsed, job_hud_body, payload_for_timeout
from crcr.relay.results.forwarder import HudForwarder
from crcr.relay.results.job_finish import JobFinish
from crcr.relay.sweeper.metrics import COMPLETIONS_REDONE, JOB_FAILURES, ZOMBIES_FINALISED
from crcr.relay.sweeper.pass_limit import PassLimit
from crcr.relay.sweeper.report import SweepReport
from crcr.stores.roles import Deadlines, JobStates
from crcr.stores.state import StateStoreUnavailable


class OverdueStore(JobStates, Deadlines, Protocol):
    """The state store's roles this module uses."""


log = logging.getLogger(__name__)

DeadlineHandler = Callable[[str, float], Awaitable[bool]]
"""Given a due key and the time, do what it stands for; True when it may leave the list
(a handler that wants another visit tracks the key's next deadline itself)."""

FAILED_JOB_RETRY = 3600.0
"""Seconds before the sweeper tries again an overdue job it failed on.

Such a job is usually one it can never handle (a record from an older release, or a
corrupt one). Left due, it would come first on the deadline list every pass and hold up
the jobs behind it; an hour on, it costs one log line an hour until its record expires
(`CRCR_STATUS_TTL`), and is finalised should a fix let it through.
"""


@dataclass(frozen=True)
class OverdueJobs:
    """Finalise the jobs on the deadline list that are due.

    `on_finalised` hooks get a job timed out or whose completion was redone, as the
    callback's `on_accepted` hooks would have.
    """

    store: OverdueStore
    forwarder: HudForwarder
    status_ttl: int
    on_finalised: Sequence[JobHook]
    clock: Callable[[], float]
    batch_size: int
    hook_budget: float
    deadline_handlers: Mapping[str, DeadlineHandler] = field(default_factory=dict)
    """Handlers of other components' deadline-list keys, by key prefix."""
    supersede: Callable[[Job], Awaitable[bool]] | None = None
    """Asked before a job is timed out: True when it was superseded instead (SPEC §15),
    so that a superseded job never becomes a `timed_out` row that counts."""

    async def finalise(self, report: SweepReport, limit: PassLimit) -> None:
        """Time out jobs in progress past `CRCR_ZOMBIE_TIMEOUT`; redo lost completions.

        A completion is lost when its relay died between the transition and the HUD row
        and hooks (see `jobs.lifecycle.COMPLETION_GRACE`). A job still due after its
        visit (see `_finalise`) comes back from `overdue`: it waits for the next pass.
        """
        now = self.clock()
        seen: set[str] = set()
        while True:
            keys = await self.store.overdue(now, limit=self.batch_size)
            fresh = [key for key in keys if key not in seen]
            for key in fresh:
                if not await limit.allows_more_as_leader():
                    return
                seen.add(key)
                await self._visit(key, now, report)
            if len(keys) < self.batch_size or not fresh:
                return

    async def _visit(self, key: str, now: float, report: SweepReport) -> None:
        """Finalise one overdue job; a job that fails is logged and tried again later.

        One record the sweeper cannot handle (an older format, a corrupt one) must not
        abort the pass, every pass, before any queue is drained.
        """
        try:
            finished = await self._finalise(key, now, report)
        except StateStoreUnavailable:
            raise
        except Exception:
            # Job records hold no credentials: the exception may quote them.
            log.exception(
                "sweeper failed on overdue job %s; trying again in %.0f s", key, FAILED_JOB_RETRY
            )
            JOB_FAILURES.inc()
            report.jobs_failed += 1
            await self.store.track_deadline(key, now + FAILED_JOB_RETRY)
            return
        if finished:
            await self.store.untrack_deadline(key)

    async def _finalise(self, key: str, now: float, report: SweepReport) -> bool:
        """Time out or redo one overdue job; whether it may leave the deadline list.

        It leaves once timed out or redone, or when there is nothing left to watch (the
        record is gone, or timed out already). A job whose timeout did not apply has
        moved on since it was read: typically a completion landed, whose relay may still
        be writing the HUD row, or may die before it does. It stays, and the next pass
        looks again (and redoes the completion, unless its relay finished it first).
        """
        for prefix, handler in self.deadline_handlers.items():
            if key.startswith(prefix):
                return await handler(key, now)
        record = await self.store.get_job(key)
        if record is None:
            return True
        # An unreadable record raises here: `_visit` logs it and tries again later.
        job = Job.from_store(key, record)
        if job.state is JobState.IN_PROGRESS:
            if self.supersede is not None and await self.supersede(job):
                return True
            if not await self._time_out(job, now):
                return False
            report.zombies_finalised += 1
        elif job.state is JobState.COMPLETED:
            await self._redo_completion(job)
            report.completions_redone += 1
        return True

    async def _time_out(self, job: Job, now: float) -> bool:
        """Finalise a zombie as `timed_out`; False if it moved on since it was read (its
        deadline stays, for the next pass to look again)."""
        timeout = JobTimeout(now)
        finish = JobFinish(
            self.store,
            self.forwarder,
            self.on_finalised,
            self.hook_budget,
            self.status_ttl,
            source="sweeper",
        )
        timed_out = await finish.finish(
            job.timed_out(timeout),
            timeout.to_record(),
            allowed_from=TIMEOUT_FROM,
            callback_payload=payload_for_timeout(job.callback, completed_at=now),
            execution_time=elapsed(now, job.in_progress_at),
            item_id=f"timeout:{job.key}",
            untrack=False,
        )
        if timed_out:
            ZOMBIES_FINALISED.inc()
        return timed_out

    async def _redo_completion(self, job: Job) -> None:
        """The HUD row and hooks of a completion, from the job record, through the queue.

        Both are safe to repeat (the row is an upsert, check runs are queued once per
        transition), so a completion whose effects were done after all costs nothing.
        The row carries the callback minus the echoed payload: a HUD that reads the
        echo (PyTorch's) gets it without, as it does for a timed-out job.
        """
        log.warning(
            "job %s completed without its HUD row and hooks confirmed; redoing them", job.key
        )
        hud_body = job_hud_body(
            job,
            execution_time=elapsed(job.completed_at, job.in_progress_at),
            callback_payload=job.callback,
        )
        expect = HudExpectation.of(job)
        await self.forwarder.enqueue(hud_body, expect=expect, item_id=f"completed:{job.key}")
        COMPLETIONS_REDONE.inc()
        await self._run_hooks(job, hud_body)

    async def _run_hooks(self, job: Job, hud_body: Mapping[str, Any]) -> None:
        event = JobTransitioned(job, hud_body, source="sweeper")
        await run_hooks(self.on_finalised, event, budget=self.hook_budget)

"""The sweeper's first step: time out zombie jobs and redo completions whose relay died.

Every step is safe to run twice or concurrently: a job is finalised by an atomic
transition, and its HUD body is queued before the transition (a crash in between
leaves a body the HUD queue handler drops as stale).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from crcr.relay.allowlist.model import Level
from crcr.relay.callback.accept import run_hooks
from crcr.relay.callback.deps import AcceptedCallback, AcceptedHook
from crcr.relay.callback.hud_body import (
    build_hud_body,
    dispatch_section,
    elapsed,
    payload_for_timeout,
)
from crcr.relay.callback.hud_forwarder import Delivery, HudForwarder
from crcr.relay.callback.job_state import TIMEOUT_FROM, JobState, timed_out_record
from crcr.relay.callback.metrics import COMPLETIONS_REDONE, JOB_FAILURES, ZOMBIES_FINALISED
from crcr.relay.sweeper.pass_limit import PassLimit
from crcr.relay.sweeper.report import SweepReport
from crcr.relay.webhook.records import DispatchRecord
from crcr.stores.state import StateStore, StateStoreUnavailable

log = logging.getLogger(__name__)

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

    store: StateStore
    forwarder: HudForwarder
    status_ttl: int
    on_finalised: Sequence[AcceptedHook]
    clock: Callable[[], float]
    batch_size: int
    hook_budget: float

    async def finalise(self, report: SweepReport, limit: PassLimit) -> None:
        """Time out jobs in progress past `CRCR_ZOMBIE_TIMEOUT`; redo lost completions.

        A completion is lost when its relay died between the transition and the HUD row
        and hooks (see `callback.accept.COMPLETION_GRACE`). A job still due after its
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
        job = await self.store.get_job(key)
        if job is None:
            return True
        if job.state == JobState.IN_PROGRESS:
            if not await self._time_out(key, job.data, now):
                return False
            report.zombies_finalised += 1
        elif job.state == JobState.COMPLETED:
            await self._redo_completion(key, job.data)
            report.completions_redone += 1
        return True

    async def _time_out(self, key: str, data: Mapping[str, Any], now: float) -> bool:
        hud_body = _hud_body_from_job(
            data,
            execution_time=elapsed(now, data.get("in_progress_at")),
            callback_payload=payload_for_timeout(data.get("callback") or {}, completed_at=now),
        )
        # Queued *before* the transition: a crash in between leaves a queued body the
        # queue handler drops as stale if the transition never happened, instead of a
        # TIMED_OUT job whose HUD row was never written.
        expect = {"job_key": key, "state": str(JobState.TIMED_OUT), "conclusion": "timed_out"}
        await self.forwarder.enqueue(hud_body, expect=expect, item_id=f"timeout:{key}")
        transition = await self.store.transition_job(
            key,
            allowed_from={None if s is None else str(s) for s in TIMEOUT_FROM},
            new=timed_out_record({"timed_out_at": now}),
            ttl=self.status_ttl,
        )
        if not transition.applied:
            return False
        ZOMBIES_FINALISED.inc()
        await self._run_hooks(key, data, JobState.TIMED_OUT, hud_body)
        return True

    async def _redo_completion(self, key: str, data: Mapping[str, Any]) -> None:
        """The HUD row and hooks of a completion, from the job record, through the queue.

        Both are safe to repeat (the row is an upsert, check runs are queued once per
        transition), so a completion whose effects were done after all costs nothing.
        The row carries the callback minus the echoed payload: a HUD that reads the
        echo (PyTorch's) gets it without, as it does for a timed-out job.
        """
        log.warning("job %s completed without its HUD row and hooks confirmed; redoing them", key)
        hud_body = _hud_body_from_job(
            data,
            execution_time=elapsed(data.get("completed_at"), data.get("in_progress_at")),
            callback_payload=data.get("callback") or {},
        )
        conclusion = data.get("conclusion")
        expect = {"job_key": key, "state": str(JobState.COMPLETED), "conclusion": conclusion}
        await self.forwarder.enqueue(hud_body, expect=expect, item_id=f"completed:{key}")
        COMPLETIONS_REDONE.inc()
        await self._run_hooks(key, data, JobState.COMPLETED, hud_body)

    async def _run_hooks(
        self, key: str, data: Mapping[str, Any], state: JobState, hud_body: Mapping[str, Any]
    ) -> None:
        accepted = AcceptedCallback(
            verified_repo=str(data["verified_repo"]),
            level=Level[str(data["level"])],
            body=None,
            callback_payload=hud_body["untrusted"]["callback_payload"],
            record=DispatchRecord.from_store(data["record"]),
            job_key=key,
            state=state,
            hud_body=hud_body,
            hud_delivery=Delivery.QUEUED,
            source="sweeper",
            issuer_kind=data.get("issuer_kind"),
        )
        await run_hooks(self.on_finalised, accepted, budget=self.hook_budget)


def _hud_body_from_job(
    data: Mapping[str, Any], *, execution_time: float | None, callback_payload: Mapping[str, Any]
) -> dict[str, Any]:
    """A SPEC §6 body from what the in_progress callback stored in the job record."""
    record = DispatchRecord.from_store(data["record"])
    return build_hud_body(
        verified_repo=str(data["verified_repo"]),
        level=str(Level[str(data["level"])]),
        queue_time=data.get("queue_time"),
        execution_time=execution_time,
        dispatch=dispatch_section(record.context),
        callback_payload=callback_payload,
    )

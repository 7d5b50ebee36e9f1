"""Steps 7-9 of a callback: the atomic transition, timing metrics, HUD write and hooks.

The transition is the single point of exactly-once: of any number of concurrent
identical callbacks, only the one whose compare-and-set applies goes on to write the
HUD and run the hooks; the others are answered "duplicate" with nothing written.

So the HUD row and the hooks of a completion must not depend on this process living
until they are done: a relay killed in between would leave the reporter's retry a
duplicate and an L3/L4 check run in progress for good. The completed transition
therefore keeps the job on the sweeper's deadline list for `COMPLETION_GRACE` seconds,
and the job record holds what the sweeper needs to redo them (`jobs.job.Job`); the job
leaves the list once they are done.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

from crcr.relay.allowlist.model import Level
from crcr.relay.callback.deps import CallbackDeps
from crcr.relay.callback.hud_report import hud_report
from crcr.relay.callback.schema import CallbackBody, ParsedCallback
from crcr.relay.jobs.dispatch import DispatchRecord
from crcr.relay.jobs.events import ClaimRead, JobTransitioned, run_hooks
from crcr.relay.jobs.expectation import HudExpectation
from crcr.relay.jobs.job import Job, JobCompletion
from crcr.relay.jobs.lifecycle import (
    COMPLETION_GRACE,
    Classification,
    JobState,
    ReportedStatus,
    allowed_from_for_store,
    classify,
    job_store_key,
)
from crcr.relay.results.body import elapsed, job_hud_body, queue_time
from crcr.relay.results.forwarder import Delivery, ForwardResult
from crcr.stores.state import ClaimRef, JobCount, JobRecord
from crcr.web.error_bodies import error_body
from crcr.web.refusal import Invalid

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobOutcome:
    """What the endpoint answers: the classification and, when accepted, the HUD result."""

    classification: Classification
    forward: ForwardResult | None = None


def callback_payload_for(deps: CallbackDeps, callback: ParsedCallback) -> dict[str, Any]:
    """`untrusted.callback_payload`: the whole body only for a HUD that reads the echo."""
    if deps.forwarder.wants_echoed_payload:
        return callback.as_received()
    return callback.without_payload


def job_key_for(body: CallbackBody, repo: str) -> str:
    """The store key of the job a callback reports on."""
    workflow = body.workflow
    return job_store_key(
        body.delivery_id, repo, workflow.run_id, workflow.run_attempt, workflow.job_name
    )


def job_count(deps: CallbackDeps, delivery_id: str, repo: str) -> JobCount:
    """Bound the jobs (and so the upstream check runs) one repo may start per dispatch.

    Every job is announced by its `in_progress` callback, counted in the transition's
    own store step; a repeat of one counts again, which only makes the bound tighter.
    Refusals are not counted.
    """
    return JobCount(
        f"jobs:{delivery_id}:{repo.lower()}",
        deps.settings.max_jobs_per_dispatch,
        deps.settings.status_ttl,
    )


def too_many_jobs(deps: CallbackDeps) -> Invalid:
    """The refusal of a job beyond `job_count`'s bound, naming the setting."""
    limit = deps.settings.max_jobs_per_dispatch
    return Invalid(
        f"workflow.job_name: more than {limit} jobs reported for this dispatch "
        "(CRCR_MAX_JOBS_PER_DISPATCH)",
    )


async def process_job_callback(
    deps: CallbackDeps,
    *,
    key: str,
    verified_repo: str,
    level: Level,
    callback: ParsedCallback,
    record: DispatchRecord,
    issuer_kind: str = "github",
) -> JobOutcome:
    """Apply the transition of job `key` and, if it applied, forward to the HUD and run
    the hooks."""
    body = callback.body
    now = deps.clock()
    status = body.workflow.status
    in_progress = status is ReportedStatus.IN_PROGRESS
    completion: JobCompletion | None = None
    if in_progress:
        started = Job.started(
            key,
            verified_repo=verified_repo,
            level=level,
            dispatch=record,
            callback=callback.without_payload,
            at=now,
            queue_time=queue_time(now, record.sent_at, body.workflow.run_attempt),
            issuer_kind=issuer_kind,
        )
        new = started.to_record()
    else:
        completion = JobCompletion.of(body.workflow.conclusion, now, callback.without_payload)
        new = completion.to_record()
    claim = _oncall_claim(deps, record, verified_repo) if completion is not None else None
    transition = await deps.store.transition_job_and_deadline(
        key,
        allowed_from=allowed_from_for_store(status),
        new=new,
        ttl=deps.settings.status_ttl,
        # Tracked while in progress (zombies), and once completed until its effects
        # are done (a relay that died before them), for the sweeper.
        deadline=now + (deps.settings.zombie_timeout if in_progress else COMPLETION_GRACE),
        count=job_count(deps, body.delivery_id, verified_repo) if in_progress else None,
        listed_under=record.jobs_list if in_progress else None,
        read_claim=claim,
    )
    if not transition.counted:
        raise too_many_jobs(deps)
    verdict = classify(status, completion.conclusion if completion else None, transition)
    if not verdict.accepted:
        return JobOutcome(verdict)

    if completion is None:
        job, execution_time = started, None
    else:
        # A record this release cannot read (an older format) gives a row without timing.
        before = Job.readable(key, transition.previous) or _unrecorded(
            key, verified_repo, level, record, issuer_kind
        )
        job = before.completed(completion)
        execution_time = elapsed(now, before.in_progress_at)
    if record.superseded_by is not None and job.dispatch.superseded_by is None:
        # A late callback of a superseded job (SPEC §15): accepted, shown as superseded,
        # never counted; the job record kept the dispatch as it was when the job started.
        job = replace(job, dispatch=record)
    document = callback_payload_for(deps, callback)
    hud_body = job_hud_body(
        job, execution_time=execution_time, callback_payload=document, level=str(level)
    )
    report = None
    if deps.forwarder.takes_reports:
        report = hud_report(
            callback,
            verified_repo=verified_repo,
            level=str(level),
            context=job.dispatch.context,
            queue_time=job.queue_time,
            execution_time=execution_time,
            superseded_by=job.dispatch.superseded_by,
        )
    result = await deps.forwarder.forward(
        hud_body, report=report, expect=HudExpectation.of(job), budget=deps.forward_budget
    )
    if result.delivery is Delivery.REJECTED:
        await _undo_transition(deps, key, job.state, transition.previous)
        return JobOutcome(verdict, result)
    comment = None if claim is None else ClaimRead(claim, transition.claim_value)
    event = JobTransitioned(job, hud_body, oncall_comment=comment)
    await run_hooks(deps.on_accepted, event, budget=deps.hook_budget)
    if not in_progress:
        # Not waited for: were it lost, the sweeper's redo is harmless.
        await deps.store.untrack_deadline(key, wait=False)
    return JobOutcome(verdict, result)


def _oncall_claim(deps: CallbackDeps, record: DispatchRecord, repo: str) -> ClaimRef | None:
    """The oncall comment claim a finished job's hooks read, if it is a PR's job."""
    pr_number = record.context.pr_number
    if deps.oncall_claim is None or not pr_number:
        return None
    return deps.oncall_claim(pr_number, repo)


def _unrecorded(
    key: str, verified_repo: str, level: Level, record: DispatchRecord, issuer_kind: str
) -> Job:
    """The job before a completion, when its record is unreadable: what the callback knows."""
    return Job(
        key=key,
        state=JobState.IN_PROGRESS,
        verified_repo=verified_repo,
        level=level,
        dispatch=record,
        callback={},
        in_progress_at=None,
        queue_time=None,
        issuer_kind=issuer_kind,
    )


async def _undo_transition(
    deps: CallbackDeps, key: str, new_state: JobState, previous: JobRecord | None
) -> None:
    """Put a job back as it was before a transition whose HUD row was refused (4xx).

    The caller gets the HUD's 4xx: it sent something wrong. Left in its new state, the
    job would answer the corrected retry "duplicate" and its result would never reach
    the HUD; no hook has run, so nothing else refers to the new state.
    """
    deadline = None
    if previous is not None and previous.state == JobState.IN_PROGRESS:
        before = Job.readable(key, previous)
        started = before.in_progress_at if before is not None else None
        deadline = (started if started is not None else deps.clock()) + deps.settings.zombie_timeout
    restored = await deps.store.restore_job(
        key,
        expected_state=str(new_state),
        previous=previous,
        ttl=deps.settings.status_ttl,
        deadline=deadline,
    )
    if not restored:
        log.warning("job %s moved on before its refused transition could be undone", key)


def forward_answer(result: ForwardResult | None) -> tuple[int, dict[str, Any], str]:
    """The HTTP answer for an accepted callback, given what the HUD did with it, and the
    outcome it counts as in `crcr_callbacks_total`."""
    if result is None or result.delivery is Delivery.DELIVERED:
        return 200, {"status": "accepted"}, "accepted"
    if result.delivery is Delivery.REJECTED:
        message = f"HUD refused the result: {result.message}"
        return result.status_code, error_body(message), "hud_rejected"
    return 202, {"status": "queued"}, "queued"

"""Steps 7-9 of a callback: the atomic transition, timing metrics, HUD write and hooks.

The transition is the single point of exactly-once: of any number of concurrent
identical callbacks, only the one whose compare-and-set applies goes on to write the
HUD and run the hooks; the others are answered "duplicate" with nothing written.

So the HUD row and the hooks of a completion must not depend on this process living
until they are done: a relay killed in between would leave the reporter's retry a
duplicate and an L3/L4 check run in progress for good. The completed transition
therefore keeps the job on the sweeper's deadline list for `COMPLETION_GRACE` seconds,
with what the sweeper needs to redo them (`sweeper.Sweeper`), and the job leaves the
list once they are done.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from crcr.relay.allowlist.model import Level
from crcr.relay.callback.deps import AcceptedCallback, AcceptedHook, CallbackDeps
from crcr.relay.callback.hud_body import (
    build_hud_body,
    dispatch_section,
    elapsed,
    queue_time,
)
from crcr.relay.callback.hud_forwarder import Delivery, ForwardResult
from crcr.relay.callback.job_state import (
    Classification,
    JobKey,
    JobState,
    ReportedStatus,
    allowed_from_for_store,
    classify,
    new_record,
)
from crcr.relay.callback.schema import CallbackBody, ParsedCallback
from crcr.relay.webhook.records import DispatchRecord
from crcr.stores.state import JobRecord
from crcr.web.error_bodies import error_body

log = logging.getLogger(__name__)

COMPLETION_GRACE = 300.0
"""Seconds a completed job's HUD row and hooks have before the sweeper redoes them.

Well beyond the callback's own budgets (HUD write and hooks: seconds), so that the
sweeper never redoes what a live request is still doing; were it to, the redo is
harmless: the HUD row is an upsert and check runs are queued once per transition.
"""

MAX_JOB_RECORD_BYTES = 96 * 1024
"""The most one job record's data may take in the state store, as JSON.

It holds the dispatch record (upstream context: GitHub allows 100 labels of at most 50
characters on a PR, ~6 KB), the callback minus its echoed payload (unknown keys
dropped, every string capped by `schema`: ~5.5 KB), the failed tests' names and files
(at most 100 of 300 + 300 characters: ~62 KB; their messages are left to the HUD, see
`kept_in_job_record`), a triage verdict (at most 16 KB) and a few numbers. With the
default `CRCR_STATUS_TTL` of 3 days and rate limit, one downstream can hold at most
100 x 60 x 72 records at once, whatever it sends.
"""


def kept_in_job_record(callback: Mapping[str, Any]) -> dict[str, Any]:
    """The callback as the job record keeps it: failed tests without their messages.

    The messages (up to 2,000 characters each, a hundred of them) are for the HUD row,
    written from the callback itself; the record needs the names (check-run summaries)
    and enough to redo a lost HUD write, where a row without messages is the price.
    """
    workflow = callback.get("workflow")
    results = workflow.get("test_results") if isinstance(workflow, Mapping) else None
    failed = results.get("failed_tests") if isinstance(results, Mapping) else None
    if not isinstance(failed, list) or not isinstance(workflow, Mapping):
        return dict(callback)
    assert isinstance(results, Mapping)
    trimmed = [
        {k: v for k, v in entry.items() if k != "message"} if isinstance(entry, Mapping) else entry
        for entry in failed
    ]
    return {
        **callback,
        "workflow": {**workflow, "test_results": {**results, "failed_tests": trimmed}},
    }


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
    return JobKey(
        body.delivery_id, repo, workflow.run_id, workflow.run_attempt, workflow.job_name
    ).as_store_key()


async def process_job_callback(
    deps: CallbackDeps,
    *,
    verified_repo: str,
    level: Level,
    callback: ParsedCallback,
    record: DispatchRecord,
    issuer_kind: str = "github",
) -> JobOutcome:
    """Apply the transition and, if it applied, forward to the HUD and run the hooks."""
    body = callback.body
    now = deps.clock()
    key = job_key_for(body, verified_repo)
    status = body.workflow.status
    conclusion = body.workflow.conclusion if status is ReportedStatus.COMPLETED else None
    trusted_dispatch = dispatch_section(record.context)
    data: dict[str, Any] = {"status": str(status), "conclusion": conclusion}
    if status is ReportedStatus.IN_PROGRESS:
        data.update(
            in_progress_at=now,
            queue_time=queue_time(now, record.sent_at, body.workflow.run_attempt),
            # What the sweeper needs to write a timed_out row if the job never completes.
            verified_repo=verified_repo,
            level=str(level),
            # Whose CI this is: only GitHub Actions jobs can be re-run or looked up.
            issuer_kind=issuer_kind,
            record=record.to_store(),
            callback=kept_in_job_record(callback.without_payload),
        )
    else:
        # With the in_progress facts merged under them, enough for the sweeper to
        # rebuild this completion's HUD body and hooks should this process die first.
        data.update(completed_at=now, callback=kept_in_job_record(callback.without_payload))

    in_progress = status is ReportedStatus.IN_PROGRESS
    transition = await deps.store.transition_job_and_deadline(
        key,
        allowed_from=allowed_from_for_store(status),
        new=new_record(status, data),
        ttl=deps.settings.status_ttl,
        # Tracked while in progress (zombies), and once completed until its effects
        # are done (a relay that died before them), for the sweeper.
        deadline=now + (deps.settings.zombie_timeout if in_progress else COMPLETION_GRACE),
    )
    verdict = classify(status, conclusion, transition)
    if not verdict.accepted:
        return JobOutcome(verdict)

    if in_progress:
        timing: tuple[float | None, float | None] = (data["queue_time"], None)
    else:
        previous = transition.previous.data if transition.previous else {}
        timing = (previous.get("queue_time"), elapsed(now, previous.get("in_progress_at")))

    document = callback_payload_for(deps, callback)
    hud_body = build_hud_body(
        verified_repo=verified_repo,
        level=str(level),
        queue_time=timing[0],
        execution_time=timing[1],
        dispatch=trusted_dispatch,
        callback_payload=document,
    )
    new_state = JobState.IN_PROGRESS if status is ReportedStatus.IN_PROGRESS else JobState.COMPLETED
    expect = {"job_key": key, "state": str(new_state), "conclusion": conclusion}
    result = await deps.forwarder.forward(hud_body, expect=expect, budget=deps.forward_budget)
    if result.delivery is Delivery.REJECTED:
        await _undo_transition(deps, key, new_state, transition.previous)
        return JobOutcome(verdict, result)
    accepted = AcceptedCallback(
        verified_repo=verified_repo,
        level=level,
        body=body,
        callback_payload=document,
        record=record,
        job_key=key,
        state=new_state,
        hud_body=hud_body,
        hud_delivery=result.delivery,
        issuer_kind=issuer_kind,
    )
    await run_hooks(deps.on_accepted, accepted, budget=deps.hook_budget)
    if not in_progress:
        # Not waited for: were it lost, the sweeper's redo is harmless.
        await deps.store.untrack_deadline(key, wait=False)
    return JobOutcome(verdict, result)


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
        started = previous.data.get("in_progress_at")
        since = started if isinstance(started, int | float) else deps.clock()
        deadline = since + deps.settings.zombie_timeout
    restored = await deps.store.restore_job(
        key,
        expected_state=str(new_state),
        previous=previous,
        ttl=deps.settings.status_ttl,
        deadline=deadline,
    )
    if not restored:
        log.warning("job %s moved on before its refused transition could be undone", key)


async def run_hooks(
    hooks: Sequence[AcceptedHook], accepted: AcceptedCallback, *, budget: float
) -> None:
    """Run the hooks within `budget` seconds together; a failing hook is logged, never fatal.

    The job's state has already changed and the HUD has the row: failing the callback
    now would only make the reporter retry into a "duplicate". A hook that hangs is cut
    at the deadline; the hooks after it still run what they can do without waiting.
    """
    deadline = asyncio.get_running_loop().time() + budget
    for hook in hooks:
        try:
            async with asyncio.timeout_at(deadline):
                await hook(accepted)
        except Exception:
            log.exception(
                "on_accepted hook %s failed for job %s",
                getattr(hook, "__qualname__", repr(hook)),
                accepted.job_key,
            )


def forward_answer(result: ForwardResult | None) -> tuple[int, dict[str, Any], str]:
    """The HTTP answer for an accepted callback, given what the HUD did with it, and the
    outcome it counts as in `crcr_callbacks_total`."""
    if result is None or result.delivery is Delivery.DELIVERED:
        return 200, {"status": "accepted"}, "accepted"
    if result.delivery is Delivery.REJECTED:
        message = f"HUD refused the result: {result.message}"
        return result.status_code, error_body(message), "hud_rejected"
    return 202, {"status": "queued"}, "queued"

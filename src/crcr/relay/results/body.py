"""The HUD ingestion body of SPEC §6 and the timing metrics of SPEC §5 step 8 (pure).

`trusted` is everything the relay vouches for (identity, level, timing, the dispatch it
sent); `untrusted` is the downstream's self-report, forwarded as received. A job's body
is built from its typed `Job` alone, so the callback and the sweeper (which has only the
job record) write the same row.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from crcr.relay.jobs.dispatch import UpstreamContext
from crcr.relay.jobs.job import Job


def elapsed(later: float | None, earlier: float | None) -> float | None:
    """Seconds between two epoch times, 3 decimals, clamped at 0 (clocks can skew)."""
    if later is None or earlier is None:
        return None
    return round(max(0.0, later - earlier), 3)


def queue_time(
    in_progress_at: float, dispatched_at: float | None, run_attempt: str
) -> float | None:
    """Time from dispatch to the job starting; None for re-runs.

    A re-run (run_attempt > 1) starts long after the dispatch for reasons that have
    nothing to do with the backend's queue, so its queue time would be meaningless.
    Non-numeric attempts are treated as re-runs: better no number than a wrong one.
    """
    if run_attempt.strip() != "1":
        return None
    return elapsed(in_progress_at, dispatched_at)


def iso_utc(epoch: float) -> str:
    """An ISO-8601 UTC timestamp with a `Z`, as GitHub writes them."""
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def dispatch_section(context: UpstreamContext) -> dict[str, Any]:
    """`trusted.dispatch`: the upstream facts from the dispatch record, never the body."""
    return {
        "upstream_repo": context.upstream_repo,
        "event_type": context.event_type,
        "head_sha": context.head_sha,
        "pr_number": context.pr_number,
    }


def build_hud_body(
    *,
    verified_repo: str,
    level: str,
    queue_time: float | None,
    execution_time: float | None,
    dispatch: Mapping[str, Any] | None,
    callback_payload: Mapping[str, Any],
    extra_trusted: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Assemble the SPEC §6 body."""
    trusted: dict[str, Any] = {
        "verified_repo": verified_repo,
        "downstream_repo_level": level,
        "ci_metrics": {"queue_time": queue_time, "execution_time": execution_time},
    }
    if dispatch is not None:
        trusted["dispatch"] = dict(dispatch)
    trusted.update(extra_trusted or {})
    return {"trusted": trusted, "untrusted": {"callback_payload": dict(callback_payload)}}


def payload_for_timeout(
    callback_payload: Mapping[str, Any], *, completed_at: float
) -> dict[str, Any]:
    """The self-report the sweeper stands in for: the last one, now completed/timed_out."""
    workflow = dict(callback_payload.get("workflow") or {})
    workflow.update(status="completed", conclusion="timed_out", completed_at=iso_utc(completed_at))
    return {**callback_payload, "workflow": workflow}


def job_hud_body(
    job: Job,
    *,
    execution_time: float | None,
    callback_payload: Mapping[str, Any],
    level: str | None = None,
) -> dict[str, Any]:
    """The SPEC §6 body of a job's transition, its trusted part from the job record.

    `level` is the one a callback was accepted at, when it has one: the level of the
    row is the backend's at the time of its report (the sweeper uses the job's).
    """
    return build_hud_body(
        verified_repo=job.verified_repo,
        level=level or str(job.level),
        queue_time=job.queue_time,
        execution_time=execution_time,
        dispatch=dispatch_section(job.dispatch.context),
        callback_payload=callback_payload,
        extra_trusted=superseded_section(job.dispatch.superseded_by),
    )


def superseded_section(superseded_by: str | None) -> dict[str, Any] | None:
    """`trusted.superseded_by` (SPEC §15): our addition, which the reference's HUD ignores
    as it ignores `trusted.dispatch`; a HUD that knows it counts the row in no pass rate."""
    return None if superseded_by is None else {"superseded_by": superseded_by}


def payload_for_supersession(callback_payload: Mapping[str, Any], *, at: float) -> dict[str, Any]:
    """The self-report supersession stands in for: the last one, now completed/cancelled."""
    workflow = dict(callback_payload.get("workflow") or {})
    workflow.update(status="completed", conclusion="cancelled", completed_at=iso_utc(at))
    return {**callback_payload, "workflow": workflow}

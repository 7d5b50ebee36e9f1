"""A backend's state (SPEC §13): `passing`, `failing`, `flaky`, `stale` or `no_data`.

Pure: the HUD's rows and the relay's dispatch times go in as values, the clock as `now`.
The state is what alerts follow (one alert per change, never one per failure), so it
judges only what says something about the backend's health on the upstream's default
branch: completed `push` and `nightly` jobs. Probe, bisect and A/A runs (`crcr_probe`,
`crcr_bisect`, `crcr_aa`) are the relay testing itself or hunting a culprit: they never
count. A cancelled or skipped job is no verdict either way, so it is passed over too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

COUNTED_EVENTS = frozenset({"push", "nightly"})
"""The default branch's jobs and nightly self-reports: what a backend's state judges."""
NEVER_COUNTED_EVENTS = frozenset({"crcr_probe", "crcr_bisect", "crcr_aa"})
"""The relay's own runs: never a backend's state, nor its level criteria (SPEC §13)."""
PASSED = frozenset({"success"})
FAILED = frozenset({"failure", "timed_out"})


class BackendState(StrEnum):
    """What alerts follow; `no_data` is a first state, whose change sends no alert."""

    PASSING = "passing"
    FAILING = "failing"
    FLAKY = "flaky"
    STALE = "stale"
    NO_DATA = "no_data"


@dataclass(frozen=True)
class CompletedJob:
    """One completed job execution as the HUD stored it.

    `job` names the job across its attempts (delivery, workflow and job name): a re-run
    is the same `job` with a higher `run_attempt`.
    """

    job: str
    event_type: str
    run_attempt: int
    conclusion: str | None
    completed_at: datetime


@dataclass(frozen=True)
class Silence:
    """What staleness is judged from: the last report, and the first dispatch after it.

    `first_unanswered_dispatch_at` is the earliest dispatch sent to the backend after
    its last report (None: nothing was sent since, so silence is not the backend's fault).
    """

    last_report_at: datetime | None
    first_unanswered_dispatch_at: datetime | None


def counted(
    jobs: Sequence[CompletedJob], events: frozenset[str] = COUNTED_EVENTS
) -> list[CompletedJob]:
    """The jobs a state judges, newest first: default-branch or nightly, with a verdict.

    `events` narrows or widens that (a badge's `?event=`); the relay's own runs never count.
    """
    kept = [
        job
        for job in jobs
        if job.event_type in events - NEVER_COUNTED_EVENTS and job.conclusion in PASSED | FAILED
    ]
    return sorted(kept, key=lambda job: job.completed_at, reverse=True)


def is_stale(silence: Silence, now: datetime, stale_seconds: float) -> bool:
    """Nothing reported for `stale_seconds` while dispatches were sent to the backend.

    A backend that never reported is silent since the first dispatch it was sent.
    """
    sent = silence.first_unanswered_dispatch_at
    if sent is None:
        return False
    silent_since = silence.last_report_at or sent
    return (now - silent_since).total_seconds() >= stale_seconds


def _rerun_passed(failed: CompletedJob, jobs: Sequence[CompletedJob]) -> bool:
    return any(
        other.job == failed.job
        and other.run_attempt > failed.run_attempt
        and other.conclusion in PASSED
        for other in jobs
    )


def backend_state(
    jobs: Sequence[CompletedJob],
    silence: Silence,
    *,
    now: datetime,
    alert_after: int,
    stale_seconds: float,
    events: frozenset[str] = COUNTED_EVENTS,
) -> BackendState:
    """The backend's state from its recent completed jobs (any order, any event type).

    `stale` comes first (a silent backend's old results say nothing of today); then
    `failing` when each of the last `alert_after` counted jobs failed; `flaky` when
    some of them failed and a re-run of a failed one passed; otherwise `passing`, or
    `no_data` with nothing counted. `jobs` should reach back far enough to hold the
    re-runs of the last `alert_after` (the reader takes a window several times that).
    """
    if is_stale(silence, now, stale_seconds):
        return BackendState.STALE
    recent = counted(jobs, events)
    if not recent:
        return BackendState.NO_DATA
    last = recent[:alert_after]
    failures = [job for job in last if job.conclusion in FAILED]
    if len(last) == alert_after and len(failures) == alert_after:
        return BackendState.FAILING
    if any(_rerun_passed(job, recent) for job in failures):
        return BackendState.FLAKY
    return BackendState.PASSING

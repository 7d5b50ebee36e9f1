"""The canary's nightly probe runs (SPEC §13), judged like the reference's nightly card.

Pure. Besides dispatched probes, the canary runs its probe jobs every night and reports
them itself (`event_type: nightly`, the tested upstream commit as the delivery id): a
relay that accepts callbacks but dispatches nothing still shows them, so they tell the
callback path apart from the dispatch path. A run passes when every job ended as
expected (the same `xfail` / `expected_conclusion` rules as a probe's), fails on any
unexpected one, and is still `running` while a job has not completed; the newest
`JUDGED_PROBES` runs are shown, with the unexpected jobs only. A nightly run has no
dispatch, so it is never overdue: the 5 probes above say whether the relay sends.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from crcr.hud.health.canary import (
    JUDGED_PROBES,
    CanaryStatus,
    ProbeJob,
    ProbeState,
    Unexpected,
    unexpected_jobs,
)


@dataclass(frozen=True)
class NightlyRun:
    """One night's self-reported run: the tested commit, its latest report, its jobs."""

    delivery_id: str
    reported_at: datetime
    jobs: tuple[ProbeJob, ...]


@dataclass(frozen=True)
class JudgedNightly:
    """A nightly run with its state (`passed`, `failed` or `running`)."""

    run: NightlyRun
    state: ProbeState


@dataclass(frozen=True)
class NightlyVerdict:
    """The nightly card: its status, the runs newest first, and only what went wrong."""

    status: CanaryStatus
    runs: tuple[JudgedNightly, ...]
    unexpected: tuple[Unexpected, ...]


def nightly_state(run: NightlyRun) -> ProbeState:
    """`failed` on any unexpected job, `passed` once every job completed, else `running`."""
    if unexpected_jobs(run.jobs):
        return ProbeState.FAILED
    if run.jobs and all(job.status == "completed" for job in run.jobs):
        return ProbeState.PASSED
    return ProbeState.RUNNING


def judge_nightly(runs: Sequence[NightlyRun]) -> NightlyVerdict:
    """Healthy when the newest judged runs all passed; `no_data` before any finished."""
    newest = sorted(runs, key=lambda run: run.reported_at, reverse=True)[:JUDGED_PROBES]
    judged = tuple(JudgedNightly(run, nightly_state(run)) for run in newest)
    finished = [j for j in judged if j.state is not ProbeState.RUNNING]
    unexpected = tuple(
        item
        for j in finished
        if j.state is ProbeState.FAILED
        for item in unexpected_jobs(j.run.jobs)
    )
    if not finished:
        status = CanaryStatus.NO_DATA
    elif unexpected:
        status = CanaryStatus.DEGRADED
    else:
        status = CanaryStatus.HEALTHY
    return NightlyVerdict(status, judged, unexpected)

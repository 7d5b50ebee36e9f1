"""The canary's verdict (SPEC §13): Healthy, Degraded or no data, from its probes.

Pure: the probes (every dispatch to the canary, upstream PRs and the leader's
`crcr_probe` alike), the canary's reported jobs and the clock go in; the verdict and
only what makes it Degraded come out — the unexpected jobs and the overdue probes, never
the ones that behaved.

A probe still inside its deadline is `running`: it is listed but not judged, so a probe
in flight never turns the canary Degraded; the verdict is taken over the newest
`JUDGED_PROBES` probes that passed, failed or are overdue.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from crcr.hud.health.expected import expected_conclusion

JUDGED_PROBES = 5


class CanaryStatus(StrEnum):
    """The canary's verdict; `no_data` without a canary or any judged probe."""

    HEALTHY = "healthy"
    DEGRADED = "degraded"
    NO_DATA = "no_data"


class ProbeState(StrEnum):
    """One probe's outcome so far."""

    PASSED = "passed"
    FAILED = "failed"
    OVERDUE = "overdue"
    RUNNING = "running"


@dataclass(frozen=True)
class ProbeDispatch:
    """One dispatch to the canary: when it was first sent, and for what event."""

    delivery_id: str
    event_type: str
    dispatched_at: datetime


@dataclass(frozen=True)
class ProbeJob:
    """One of the canary's job rows for a probe; `expected` is its explicit field, if any."""

    delivery_id: str
    job_name: str
    status: str
    conclusion: str | None
    expected: str | None


@dataclass(frozen=True)
class Unexpected:
    """A completed probe job whose conclusion is not the one it should have reached."""

    delivery_id: str
    job_name: str
    conclusion: str | None
    expected: str


@dataclass(frozen=True)
class JudgedProbe:
    """A probe with its state."""

    probe: ProbeDispatch
    state: ProbeState


@dataclass(frozen=True)
class CanaryVerdict:
    """The verdict, the probes it looked at (newest first), and what went wrong."""

    status: CanaryStatus
    probes: tuple[JudgedProbe, ...]
    unexpected: tuple[Unexpected, ...]
    overdue: tuple[ProbeDispatch, ...]


def unexpected_jobs(jobs: Sequence[ProbeJob]) -> list[Unexpected]:
    """The completed jobs whose conclusion differs from the one they should reach."""
    found = []
    for job in jobs:
        if job.status != "completed":
            continue
        expected = expected_conclusion(job.job_name, job.expected)
        if job.conclusion != expected:
            found.append(Unexpected(job.delivery_id, job.job_name, job.conclusion, expected))
    return found


def probe_state(
    probe: ProbeDispatch, jobs: Sequence[ProbeJob], *, now: datetime, deadline_seconds: float
) -> ProbeState:
    """`failed` on any unexpected job; `overdue` if unfinished past the deadline."""
    if unexpected_jobs(jobs):
        return ProbeState.FAILED
    finished = bool(jobs) and all(job.status == "completed" for job in jobs)
    if finished:
        return ProbeState.PASSED
    late = (now - probe.dispatched_at).total_seconds() > deadline_seconds
    return ProbeState.OVERDUE if late else ProbeState.RUNNING


def judge_canary(
    probes: Sequence[ProbeDispatch],
    jobs: Sequence[ProbeJob],
    *,
    now: datetime,
    deadline_seconds: float,
) -> CanaryVerdict:
    """Judge the newest probes; `jobs` may hold rows of any probe (others are ignored)."""
    by_probe: dict[str, list[ProbeJob]] = {}
    for job in jobs:
        by_probe.setdefault(job.delivery_id, []).append(job)
    listed: list[JudgedProbe] = []
    judged = 0
    for probe in sorted(probes, key=lambda p: p.dispatched_at, reverse=True):
        if judged == JUDGED_PROBES:
            break
        own = by_probe.get(probe.delivery_id, [])
        state = probe_state(probe, own, now=now, deadline_seconds=deadline_seconds)
        listed.append(JudgedProbe(probe, state))
        judged += state is not ProbeState.RUNNING
    judged_probes = [p for p in listed if p.state is not ProbeState.RUNNING]
    unexpected = tuple(
        item
        for p in judged_probes
        if p.state is ProbeState.FAILED
        for item in unexpected_jobs(by_probe[p.probe.delivery_id])
    )
    overdue = tuple(p.probe for p in judged_probes if p.state is ProbeState.OVERDUE)
    if not judged_probes:
        status = CanaryStatus.NO_DATA
    elif unexpected or overdue:
        status = CanaryStatus.DEGRADED
    else:
        status = CanaryStatus.HEALTHY
    return CanaryVerdict(status, tuple(listed), unexpected, overdue)

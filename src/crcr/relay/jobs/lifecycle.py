"""The job lifecycle state machine of SPEC §5 step 7 (diagram: docs/job-lifecycle.md).

Pure: the store applies transitions atomically (`JobStates.transition_job`), this module
decides which transitions are legal and what the store's answer means for the caller.
Change the diagram in docs/job-lifecycle.md together with `TRANSITIONS`. The callback
moves jobs on a downstream's word, the sweeper on a timeout: both ask this table.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from typing import Any
from urllib.parse import quote

from crcr.stores.state import JobRecord, Transition

_UNESCAPED = re.compile(r"[A-Za-z0-9_.~-]*")
"""What `quote(part, safe="")` leaves as it is: a part of only these is its own escape,
and the usual one (a UUID, a number, a job name) skips quote's encode and byte scan."""


class JobState(StrEnum):
    """Where one job (one run attempt of one job of one workflow) stands.

    DISPATCHED has no record of its own: a job is DISPATCHED while the store knows
    nothing about it (its dispatch record is what proves it was sent).
    """

    DISPATCHED = "DISPATCHED"
    IN_PROGRESS = "IN_PROGRESS"
    COMPLETED = "COMPLETED"
    TIMED_OUT = "TIMED_OUT"
    SUPERSEDED = "SUPERSEDED"
    """A newer head of its PR replaced it while it ran (SPEC §15); it never counts."""


class ReportedStatus(StrEnum):
    """The `workflow.status` values a downstream may report."""

    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"


class Verdict(StrEnum):
    """How a callback is classified against the job's state."""

    ACCEPTED = "accepted"
    DUPLICATE = "duplicate"
    CONFLICT = "conflict"
    NOT_STARTED = "not_started"


# Target state for each reported status, and the states it may be entered from.
# `None` stands for "no record yet" (DISPATCHED). TIMED_OUT → COMPLETED is the late
# truth replacing the sweeper's verdict (SPEC §5 step 7, last bullet); SUPERSEDED →
# COMPLETED a superseded job's late completion, accepted and still never counted (its
# dispatch record says superseded, and every row it writes carries that).
TRANSITIONS: Mapping[ReportedStatus, tuple[JobState, frozenset[JobState | None]]] = {
    ReportedStatus.IN_PROGRESS: (JobState.IN_PROGRESS, frozenset({None})),
    ReportedStatus.COMPLETED: (
        JobState.COMPLETED,
        frozenset({JobState.IN_PROGRESS, JobState.TIMED_OUT, JobState.SUPERSEDED}),
    ),
}

# The sweeper's own transition: a zombie is finalised only while still in progress.
TIMEOUT_FROM: frozenset[JobState | None] = frozenset({JobState.IN_PROGRESS})

# Supersession's (SPEC §15): only a job still running is superseded; one that ended
# keeps its result, which counts.
SUPERSEDE_FROM: frozenset[JobState | None] = frozenset({JobState.IN_PROGRESS})

COMPLETION_GRACE = 300.0
"""Seconds a completed job's HUD row and hooks have before the sweeper redoes them.

A completed job stays on the deadline list this long, with what the sweeper needs to
redo its effects should the relay die first. Well beyond the callback's own budgets
(HUD write and hooks: seconds), so that the sweeper never redoes what a live request is
still doing; were it to, the redo is harmless: the HUD row is an upsert and check runs
are queued once per transition.
"""


def job_store_key(delivery_id: str, repo: str, run_id: str, run_attempt: str, job_name: str) -> str:
    """The store key of one job execution (a new `run_attempt` is a new job): each part
    %-escaped, `:`-joined, so that no two jobs share one, the repository lower-cased."""
    parts = (delivery_id, repo.lower(), run_id, run_attempt, job_name)
    return ":".join([part if _UNESCAPED.fullmatch(part) else _escaped(part) for part in parts])


@lru_cache(maxsize=4096)
def _escaped(part: str) -> str:
    """`quote(part, safe="")`, remembered: the parts that need it are a repository's name
    (its `/`) and job names with spaces, the same few on every callback of a backend,
    and quote walks the part byte by byte in Python."""
    return quote(part, safe="")


@dataclass(frozen=True)
class Classification:
    """The verdict for one callback, with the HTTP answer it implies."""

    verdict: Verdict
    http_status: int
    message: str

    @property
    def accepted(self) -> bool:
        """Whether this callback changed the job and must be forwarded."""
        return self.verdict is Verdict.ACCEPTED

    @property
    def outcome(self) -> str:
        """What the callback counts as in `crcr_callbacks_total` (a completion without its
        in_progress is an invalid report like any other)."""
        return "invalid" if self.verdict is Verdict.NOT_STARTED else str(self.verdict)


def target_of(status: ReportedStatus) -> tuple[JobState, frozenset[JobState | None]]:
    """The state a reported status moves to and the states it may come from."""
    return TRANSITIONS[status]


def allowed_from_for_store(status: ReportedStatus) -> frozenset[str | None]:
    """`allowed_from` as the store takes it (plain strings, None for "no record")."""
    _, sources = target_of(status)
    return store_states(sources)


def new_record(status: ReportedStatus, data: Mapping[str, Any]) -> JobRecord:
    """The record a callback writes when its transition applies."""
    state, _ = target_of(status)
    return JobRecord(state=str(state), data=dict(data))


def classify(
    status: ReportedStatus, conclusion: str | None, transition: Transition
) -> Classification:
    """Classify a callback from the store's answer to its compare-and-set.

    Applied means accepted. Otherwise the previous record tells an exact repeat (a
    client retrying after a timeout: 200, nothing written again) from a conflict (409)
    and from a `completed` that never had an `in_progress` (400).
    """
    if transition.applied:
        return Classification(Verdict.ACCEPTED, 200, "accepted")
    previous = transition.previous
    if previous is None:
        # Only `completed` can fail against "no record": it needs an in_progress first.
        return Classification(
            Verdict.NOT_STARTED, 400, "workflow.status: completed without a prior in_progress"
        )
    current = JobState(previous.state)
    previous_conclusion = previous.data.get("conclusion")
    if status is ReportedStatus.IN_PROGRESS:
        if current in (JobState.IN_PROGRESS, JobState.TIMED_OUT, JobState.SUPERSEDED):
            # TIMED_OUT or SUPERSEDED still means "this in_progress was accepted earlier".
            return Classification(Verdict.DUPLICATE, 200, "duplicate")
        return Classification(
            Verdict.CONFLICT, 409, "workflow.status: in_progress after the job completed"
        )
    if current is JobState.COMPLETED and previous_conclusion == conclusion:
        return Classification(Verdict.DUPLICATE, 200, "duplicate")
    if current is JobState.COMPLETED:
        return Classification(
            Verdict.CONFLICT,
            409,
            f"workflow.conclusion: job already completed as {previous_conclusion!r}",
        )
    # Unreachable with TRANSITIONS as defined; a store answering oddly is a conflict.
    return Classification(Verdict.CONFLICT, 409, f"job is {current}, cannot accept {status}")


def store_states(states: frozenset[JobState | None]) -> frozenset[str | None]:
    """States as the store's `allowed_from` takes them (plain strings, None for "no record")."""
    return frozenset(None if state is None else str(state) for state in states)

"""The bookkeeping of simulated runs: jobs, attempts, runs, and what was reported."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from crcr.sandbox.simulated_ci_model import PlannedJob, WorkflowSpec

JobPhase = Literal["queued", "running", "hanging", "completed", "dropped"]
SETTLED_PHASES: frozenset[JobPhase] = frozenset({"hanging", "completed", "dropped"})


@dataclass
class JobState:
    """One job of one attempt, as it moves from the queue to its last report."""

    planned: PlannedJob
    check_run_id: int
    phase: JobPhase = "queued"
    conclusion: str | None = None


@dataclass
class AttemptState:
    """One attempt of a run: its jobs and the signal that cancels them."""

    number: int
    jobs: dict[str, JobState]
    request_token: str
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def settled(self) -> bool:
        """Every job has finished, been dropped, or hung for good."""
        return all(job.phase in SETTLED_PHASES for job in self.jobs.values())


@dataclass
class SimulatedRun:
    """A workflow run started by one dispatch, with its attempts (re-runs add attempts)."""

    repo: str
    run_id: int
    spec: WorkflowSpec
    pr_number: int | None
    directory: Path
    attempts: list[AttemptState] = field(default_factory=list)
    latest_conclusions: dict[str, str] = field(default_factory=dict)

    @property
    def current(self) -> AttemptState:
        """The newest attempt."""
        return self.attempts[-1]

    def jobs_to_rerun(self, kind: str) -> list[str] | None:
        """Job names a re-run covers: all (`rerun`), or those not yet green (failed jobs)."""
        if kind != "rerun-failed-jobs":
            return None
        return [
            name
            for name in self.spec.job_names()
            if self.latest_conclusions.get(name, "failure") != "success"
        ]

    def conclusion(self) -> str:
        """The run's overall conclusion from each job's latest result, as GitHub ranks them."""
        results = set(self.latest_conclusions.values())
        for worst in ("failure", "timed_out", "cancelled"):
            if worst in results:
                return worst
        return "success"


@dataclass(frozen=True)
class ReportRecord:
    """One report a simulated job sent, and what became of it."""

    repo: str
    run_id: int
    run_attempt: int
    job_name: str
    status: str
    conclusion: str | None
    verdict: str


@dataclass(frozen=True)
class SimulationSnapshot:
    """Counters for a progress display: runs, jobs by phase, results, report errors."""

    runs_started: int
    jobs_queued: int
    jobs_running: int
    jobs_hanging: int
    jobs_finished: int
    conclusions: dict[str, int]
    reports_sent: int
    report_errors: int
    last_error: str | None

    @property
    def failures(self) -> int:
        """Finished jobs that did not succeed (cancelled ones are not failures)."""
        return self.conclusions.get("failure", 0) + self.conclusions.get("timed_out", 0)


def snapshot_of(
    runs: list[SimulatedRun],
    *,
    conclusions: Counter[str],
    reports_sent: int,
    report_errors: int,
    last_error: str | None,
) -> SimulationSnapshot:
    """Count jobs by phase over every attempt of every run."""
    phases: Counter[str] = Counter(
        job.phase for run in runs for attempt in run.attempts for job in attempt.jobs.values()
    )
    return SimulationSnapshot(
        runs_started=len(runs),
        jobs_queued=phases["queued"],
        jobs_running=phases["running"],
        jobs_hanging=phases["hanging"],
        jobs_finished=phases["completed"],
        conclusions=dict(conclusions),
        reports_sent=reports_sent,
        report_errors=report_errors,
        last_error=last_error,
    )

"""Simulated downstream workflows: their definitions, and the plan of one run attempt (pure)."""

from __future__ import annotations

import math
import random
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Literal

from crcr.sandbox.simulated_ci_failures import FailureDetail, plan_failure

Outcome = Literal["success", "failure", "hang"]


@dataclass(frozen=True)
class Duration:
    """How many seconds something takes, drawn from a distribution.

    `lognormal` takes the median and the spread (sigma of the log): CI job times have
    the long right tail a lognormal gives (most runs near the median, a few far slower).
    """

    kind: Literal["fixed", "uniform", "lognormal"]
    first: float
    second: float = 0.0

    def __post_init__(self) -> None:
        if self.first < 0 or self.second < 0:
            raise ValueError(f"durations cannot be negative: {self}")
        if self.kind == "uniform" and self.second < self.first:
            raise ValueError(f"uniform duration needs low <= high, got {self.first}..{self.second}")

    @classmethod
    def fixed(cls, seconds: float) -> Duration:
        """Always `seconds`."""
        return cls("fixed", seconds)

    @classmethod
    def uniform(cls, low: float, high: float) -> Duration:
        """Anywhere between `low` and `high`, evenly."""
        return cls("uniform", low, high)

    @classmethod
    def lognormal(cls, median: float, sigma: float = 0.4) -> Duration:
        """Around `median`, with a long tail that grows with `sigma`."""
        if median <= 0:
            raise ValueError(f"a lognormal duration needs a positive median, got {median}")
        return cls("lognormal", median, sigma)

    def sample(self, rng: random.Random) -> float:
        """Draw one duration in seconds."""
        if self.kind == "fixed":
            return self.first
        if self.kind == "uniform":
            return rng.uniform(self.first, self.second)
        return rng.lognormvariate(math.log(self.first), self.second)


@dataclass(frozen=True)
class OutcomeRates:
    """How often a job fails, flakes (fails, then passes when re-run) or hangs.

    Whatever is left over succeeds. A hanging job reports `in_progress` and never
    reports again, which is how zombies reach the relay's sweeper.
    """

    failure: float = 0.0
    flaky: float = 0.0
    hang: float = 0.0

    def __post_init__(self) -> None:
        rates = {"failure": self.failure, "flaky": self.flaky, "hang": self.hang}
        for name, rate in rates.items():
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"{name} rate must be between 0 and 1, got {rate}")
        if sum(rates.values()) > 1.0 + 1e-9:
            raise ValueError(f"failure + flaky + hang rates exceed 1: {sum(rates.values())}")

    def draw(self, rng: random.Random, *, attempt: int) -> Outcome:
        """Pick one job's outcome; a flaky job fails only on its first attempt."""
        roll = rng.random()
        if roll < self.hang:
            return "hang"
        if roll < self.hang + self.failure:
            return "failure"
        if roll < self.hang + self.failure + self.flaky and attempt == 1:
            return "failure"
        return "success"


@dataclass(frozen=True)
class JobSpec:
    """One job of a workflow; with `matrix`, one leg per entry, each with its own name.

    Legs are named `<name> (<entry>)`, as GitHub names matrix jobs, so every leg is a
    distinct job to the relay and the HUD. `tests` > 0 makes the job report test counts;
    `outcomes`, when given, replaces the workflow's rates for this job (a GPU test job is
    flakier than a lint job). A failure names one or two of `test_names`; `broken_tests`
    fail on every run (`simulated_ci_failures`).
    """

    name: str
    duration: Duration
    matrix: tuple[str, ...] = ()
    tests: int = 0
    outcomes: OutcomeRates | None = None
    test_names: tuple[str, ...] = ()
    broken_tests: tuple[str, ...] = ()

    def leg_names(self) -> list[str]:
        """The job names this definition expands into."""
        if not self.matrix:
            return [self.name]
        return [f"{self.name} ({entry})" for entry in self.matrix]


@dataclass(frozen=True)
class WorkflowSpec:
    """A downstream repository's workflow started by every relay dispatch."""

    name: str
    jobs: tuple[JobSpec, ...]
    outcomes: OutcomeRates = field(default_factory=OutcomeRates)
    queue_delay: Duration = field(default_factory=lambda: Duration.fixed(0.0))
    triage: bool = False
    """Failed jobs attach a triage verdict (SPEC §11), as an analyzer step would."""

    def __post_init__(self) -> None:
        if not self.jobs:
            raise ValueError(f"workflow {self.name!r} has no jobs")
        names = [leg for job in self.jobs for leg in job.leg_names()]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"workflow {self.name!r} repeats job names: {duplicates}")

    def job_names(self) -> list[str]:
        """Every job (matrix leg) name, in definition order."""
        return [leg for job in self.jobs for leg in job.leg_names()]


@dataclass(frozen=True)
class PlannedJob:
    """What one job of one attempt will do: wait, run, and end how."""

    job_id: str
    name: str
    queue_delay: float
    duration: float
    outcome: Outcome
    test_results: dict[str, int] | None
    failure: FailureDetail = field(default_factory=FailureDetail)

    @property
    def is_matrix_leg(self) -> bool:
        """A leg's name differs from its job id, so it is reported with an explicit name."""
        return self.name != self.job_id


def _test_results(
    total: int, outcome: Outcome, rng: random.Random, named: int = 0
) -> dict[str, int] | None:
    if total <= 0:
        return None
    failed = 0 if outcome == "success" else min(total, named or rng.randint(1, 3))
    skipped = min(total - failed, rng.randint(0, max(total // 20, 0)))
    return {"passed": total - failed - skipped, "failed": failed, "skipped": skipped}


def plan_attempt(
    spec: WorkflowSpec,
    rng: random.Random,
    *,
    attempt: int = 1,
    only: Collection[str] | None = None,
) -> list[PlannedJob]:
    """Plan every job of one run attempt (or just the jobs named in `only`, for a re-run)."""
    planned: list[PlannedJob] = []
    for job in spec.jobs:
        for leg in job.leg_names():
            if only is not None and leg not in only:
                continue
            outcome = (job.outcomes or spec.outcomes).draw(rng, attempt=attempt)
            if job.broken_tests and outcome == "success":
                outcome = "failure"
            failure = plan_failure(
                failed=outcome == "failure",
                broken_tests=job.broken_tests,
                test_names=job.test_names,
                triage=spec.triage,
                rng=rng,
            )
            planned.append(
                PlannedJob(
                    job_id=job.name,
                    name=leg,
                    queue_delay=spec.queue_delay.sample(rng),
                    duration=job.duration.sample(rng),
                    outcome=outcome,
                    test_results=_test_results(job.tests, outcome, rng, len(failure.failed_tests)),
                    failure=failure,
                )
            )
    return planned

"""Workflow definitions for simulated CI: durations, outcome rates, matrix legs, plans."""

from __future__ import annotations

import random

import pytest

from crcr.sandbox.simulated_ci_model import (
    Duration,
    JobSpec,
    OutcomeRates,
    WorkflowSpec,
    plan_attempt,
)


def test_durations_stay_in_their_distribution() -> None:
    rng = random.Random(3)
    assert Duration.fixed(12.5).sample(rng) == 12.5
    uniform = [Duration.uniform(10, 20).sample(rng) for _ in range(200)]
    assert all(10 <= d <= 20 for d in uniform)
    lognormal = sorted(Duration.lognormal(600, 0.3).sample(rng) for _ in range(401))
    assert 500 < lognormal[200] < 700, "the median is near the given median"
    assert all(d > 0 for d in lognormal)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Duration.fixed(-1), "negative"),
        (lambda: Duration.uniform(5, 1), "low <= high"),
        (lambda: Duration.lognormal(0), "positive median"),
        (lambda: OutcomeRates(failure=1.5), "failure rate"),
        (lambda: OutcomeRates(failure=0.6, hang=0.6), "exceed 1"),
        (lambda: WorkflowSpec("ci", jobs=()), "no jobs"),
        (
            lambda: WorkflowSpec("ci", jobs=(JobSpec("a", Duration.fixed(1)),) * 2),
            "repeats job names",
        ),
    ],
)
def test_impossible_definitions_are_refused(make: object, message: str) -> None:
    assert callable(make)
    with pytest.raises(ValueError, match=message):
        make()


def test_matrix_legs_are_distinct_jobs_named_like_github_names_them() -> None:
    spec = WorkflowSpec(
        "ci",
        jobs=(
            JobSpec("build", Duration.fixed(1)),
            JobSpec("test", Duration.fixed(1), matrix=("1, 2", "2, 2")),
        ),
    )
    assert spec.job_names() == ["build", "test (1, 2)", "test (2, 2)"]
    plan = plan_attempt(spec, random.Random(0))
    assert [(job.job_id, job.name, job.is_matrix_leg) for job in plan] == [
        ("build", "build", False),
        ("test", "test (1, 2)", True),
        ("test", "test (2, 2)", True),
    ]


def test_a_flaky_job_fails_its_first_attempt_only() -> None:
    spec = WorkflowSpec(
        "ci", jobs=(JobSpec("test", Duration.fixed(1)),), outcomes=OutcomeRates(flaky=1.0)
    )
    assert [job.outcome for job in plan_attempt(spec, random.Random(0), attempt=1)] == ["failure"]
    assert [job.outcome for job in plan_attempt(spec, random.Random(0), attempt=2)] == ["success"]


def test_outcome_rates_are_honoured_over_many_draws() -> None:
    rates = OutcomeRates(failure=0.2, flaky=0.1, hang=0.05)
    rng = random.Random(11)
    draws = [rates.draw(rng, attempt=1) for _ in range(4000)]
    assert 0.03 < draws.count("hang") / 4000 < 0.07
    assert 0.26 < draws.count("failure") / 4000 < 0.34, "failures plus first-attempt flakes"


def test_a_job_can_override_the_workflow_rates_and_report_test_counts() -> None:
    spec = WorkflowSpec(
        "ci",
        jobs=(
            JobSpec("lint", Duration.fixed(1)),
            JobSpec("gpu", Duration.fixed(1), tests=100, outcomes=OutcomeRates(failure=1.0)),
        ),
    )
    lint, gpu = plan_attempt(spec, random.Random(0))
    assert (lint.outcome, lint.test_results) == ("success", None)
    assert gpu.outcome == "failure"
    assert gpu.test_results is not None and gpu.test_results["failed"] >= 1
    assert sum(gpu.test_results.values()) == 100


def test_a_rerun_plans_only_the_jobs_named() -> None:
    spec = WorkflowSpec("ci", jobs=(JobSpec("test", Duration.fixed(1), matrix=("a", "b", "c")),))
    plan = plan_attempt(spec, random.Random(0), attempt=2, only=["test (b)"])
    assert [job.name for job in plan] == ["test (b)"]

"""Simulated failures name tests and carry triage verdicts (SPEC §11), as a real job would."""

from __future__ import annotations

import random

import httpx
from tests.sandbox.test_simulated_ci import (
    QUICK,
    Callbacks,
    app_identity,
    callbacks,
    github,
    issuer,
    pr_dispatch,
    relay_client,
    signing_key,
    simulated_ci,
)
from tests.waiting import eventually

from crcr.failure_detail.triage_verdict import sanitise_triage_verdict
from crcr.sandbox.github_state import SandboxGitHub
from crcr.sandbox.oidc_issuer import SandboxIssuer
from crcr.sandbox.simulated_ci_failures import plan_failure
from crcr.sandbox.simulated_ci_model import JobSpec, OutcomeRates, WorkflowSpec, plan_attempt

__all__ = ["app_identity", "callbacks", "github", "issuer", "relay_client", "signing_key"]

NAMES = ("test_ops.TestCommon.test_add", "test_nn.TestNN.test_conv2d", "test_fft.TestFFT.test_rfft")


def test_a_job_with_broken_tests_fails_every_run_naming_them() -> None:
    spec = WorkflowSpec("ci", jobs=(JobSpec("test", QUICK, tests=100, broken_tests=NAMES[:1]),))
    for seed in range(5):
        (job,) = plan_attempt(spec, random.Random(seed))
        assert job.outcome == "failure"
        assert job.failure.failed_tests == NAMES[:1]
        assert job.test_results is not None and job.test_results["failed"] == 1


def test_a_random_failure_names_one_or_two_tests_from_the_pool() -> None:
    spec = WorkflowSpec(
        "ci",
        jobs=(JobSpec("test", QUICK, tests=100, test_names=NAMES),),
        outcomes=OutcomeRates(failure=1.0),
    )
    (job,) = plan_attempt(spec, random.Random(3))
    assert 1 <= len(job.failure.failed_tests) <= 2
    assert set(job.failure.failed_tests) <= set(NAMES)
    assert job.test_results is not None
    assert job.test_results["failed"] == len(job.failure.failed_tests)


def test_a_success_names_nothing_and_sends_no_verdict() -> None:
    detail = plan_failure(
        failed=False, broken_tests=(), test_names=NAMES, triage=True, rng=random.Random(0)
    )
    assert detail.failed_tests == () and detail.triage_verdict is None


def test_every_verdict_the_simulation_writes_passes_the_relays_rules() -> None:
    rng = random.Random(0)
    for _ in range(50):
        detail = plan_failure(failed=True, broken_tests=(), test_names=NAMES, triage=True, rng=rng)
        checked = sanitise_triage_verdict(detail.triage_verdict)
        assert checked.verdict is not None, checked.reason


async def test_a_failed_job_reports_its_tests_and_verdict_through_the_reporter(
    github: SandboxGitHub,
    issuer: SandboxIssuer,
    relay_client: httpx.AsyncClient,
    callbacks: Callbacks,
) -> None:
    spec = WorkflowSpec(
        "npu-ci",
        jobs=(JobSpec("test", QUICK, tests=50, broken_tests=NAMES[:2]),),
        triage=True,
    )
    async with simulated_ci(github, issuer, relay_client, spec):
        github.record_dispatch(pr_dispatch(7, "opened"))
        await eventually(lambda: len(callbacks.received) == 2)

    workflow = callbacks.received[-1]["body"]["workflow"]
    assert workflow["conclusion"] == "failure"
    results = workflow["test_results"]
    assert [t["name"] for t in results["failed_tests"]] == list(NAMES[:2])
    assert results["failed"] == 2 and results["passed"] + results["skipped"] == 48
    assert workflow["triage_verdict"]["category"] == "backend"

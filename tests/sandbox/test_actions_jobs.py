"""The sandbox's Actions jobs API answers from the simulated CI's own job records.

`GET /repos/{owner}/{repo}/actions/jobs/{job_id}` is what the relay asks to confirm a
reported conclusion (SPEC §11); the sandbox knows each job's real end even when the
job, through the `lies` fault knob, reports something else.
"""

from __future__ import annotations

import httpx
from tests.sandbox.test_simulated_ci import (
    BACKEND,
    QUICK,
    Callbacks,
    app_identity,
    callbacks,
    github,
    github_api,
    issuer,
    pr_dispatch,
    relay_client,
    sandbox_api,
    signing_key,
    simulated_ci,
)
from tests.waiting import eventually

from crcr.sandbox.github_state import SandboxGitHub
from crcr.sandbox.oidc_issuer import SandboxIssuer
from crcr.sandbox.simulated_ci_model import JobSpec, OutcomeRates, WorkflowSpec

__all__ = ["app_identity", "callbacks", "github", "github_api", "issuer", "relay_client"]
__all__ += ["signing_key"]

# Every field GitHub's OpenAPI description (@octokit/openapi, schema `job`) requires.
REQUIRED = {
    "id", "node_id", "run_id", "run_url", "head_sha", "workflow_name", "head_branch", "name",
    "url", "html_url", "status", "conclusion", "started_at", "completed_at", "check_run_url",
    "labels", "runner_id", "runner_name", "runner_group_id", "runner_group_name", "created_at",
}  # fmt: skip
FAILING = WorkflowSpec("npu-ci", jobs=(JobSpec("test", QUICK),), outcomes=OutcomeRates(failure=1))


def github_status(github: SandboxGitHub, job_id: int) -> str | None:
    job = github.jobs.get(BACKEND, job_id)
    return job.status if job is not None else None


async def run_one_job(
    github: SandboxGitHub,
    issuer: SandboxIssuer,
    relay_client: httpx.AsyncClient,
    callbacks: Callbacks,
    *,
    lie: str | None = None,
) -> int:
    """Dispatch once, let the job finish; return its job id (its check run id)."""
    async with simulated_ci(github, issuer, relay_client, FAILING) as ci:
        if lie is not None:
            ci.lies[BACKEND.lower()] = lie
        github.record_dispatch(pr_dispatch(7, "opened"))
        await eventually(lambda: len(callbacks.received) == 2)
        [run] = ci.runs(BACKEND)
        job_id = run.current.jobs["test"].check_run_id
        await eventually(lambda: github_status(github, job_id) == "completed")
    return job_id


async def test_a_finished_job_reads_as_github_documents_it(
    github: SandboxGitHub,
    issuer: SandboxIssuer,
    relay_client: httpx.AsyncClient,
    callbacks: Callbacks,
    github_api: httpx.AsyncClient,
) -> None:
    job_id = await run_one_job(github, issuer, relay_client, callbacks)

    response = await github_api.get(f"/repos/{BACKEND}/actions/jobs/{job_id}")

    assert response.status_code == 200
    job = response.json()
    assert set(job) >= REQUIRED
    assert (job["id"], job["status"], job["conclusion"]) == (job_id, "completed", "failure")
    assert job["name"] == "test" and job["workflow_name"] == "npu-ci"
    assert job["run_attempt"] == 1
    assert job["completed_at"].endswith("Z")
    reported = callbacks.received[-1]["body"]["workflow"]
    assert reported["check_run_id"] == str(job_id)


async def test_a_lying_job_reports_success_while_github_knows_it_failed(
    github: SandboxGitHub,
    issuer: SandboxIssuer,
    relay_client: httpx.AsyncClient,
    callbacks: Callbacks,
    github_api: httpx.AsyncClient,
) -> None:
    job_id = await run_one_job(github, issuer, relay_client, callbacks, lie="success")

    job = (await github_api.get(f"/repos/{BACKEND}/actions/jobs/{job_id}")).json()

    assert callbacks.received[-1]["body"]["workflow"]["conclusion"] == "success"
    assert job["conclusion"] == "failure"


async def test_another_repos_job_or_an_unknown_id_is_not_found(
    github: SandboxGitHub,
    issuer: SandboxIssuer,
    relay_client: httpx.AsyncClient,
    callbacks: Callbacks,
) -> None:
    job_id = await run_one_job(github, issuer, relay_client, callbacks)
    async with sandbox_api(github, "acme/other") as other:
        elsewhere = await other.get(f"/repos/acme/other/actions/jobs/{job_id}")
        unknown = await other.get("/repos/acme/other/actions/jobs/1")

    assert elsewhere.status_code == 404 and unknown.status_code == 404
    assert elsewhere.json()["message"] == "Not Found"

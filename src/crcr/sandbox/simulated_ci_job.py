"""One simulated Actions job's runner environment, and its reports sent through `crcr report`.

The reports go through the reporter's own functions with the same environment a
GitHub Actions runner gives a job, so the demo and the end-to-end test exercise the
exact code a downstream workflow runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from crcr.reporter.post import PostOutcome
from crcr.reporter.report import ReportInputs, deliver_report, prepare_report
from crcr.reporter.retry import RetryPolicy
from crcr.sandbox.oidc_issuer import SandboxIssuer
from crcr.sandbox.simulated_ci_model import PlannedJob


@dataclass(frozen=True)
class RunnerContext:
    """What every job of one run attempt shares: the repo, run ids and the event file."""

    repo: str
    workflow_name: str
    run_id: int
    run_attempt: int
    event_path: Path
    runner_temp: Path
    server_url: str = "https://github.com"


def write_event_file(path: Path, repo: str, dispatch_event_type: str, payload: Any) -> None:
    """Write the `repository_dispatch` event the runner hands the job at `GITHUB_EVENT_PATH`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    event = {
        "action": dispatch_event_type,
        "branch": "main",
        "client_payload": payload,
        "repository": {"full_name": repo},
        "sender": {"login": "crcr-sandbox[bot]", "type": "Bot"},
    }
    path.write_text(json.dumps(event), encoding="utf-8")


def job_environment(
    context: RunnerContext, job: PlannedJob, *, token_url: str, request_token: str
) -> dict[str, str]:
    """The variables GitHub Actions sets for a job with `permissions: id-token: write`."""
    owner = context.repo.split("/", 1)[0]
    return {
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "repository_dispatch",
        "GITHUB_EVENT_PATH": str(context.event_path),
        "GITHUB_WORKFLOW": context.workflow_name,
        "GITHUB_RUN_ID": str(context.run_id),
        "GITHUB_RUN_ATTEMPT": str(context.run_attempt),
        "GITHUB_RUN_NUMBER": str(context.run_id % 10_000),
        "GITHUB_JOB": job.job_id,
        "GITHUB_REPOSITORY": context.repo,
        "GITHUB_REPOSITORY_OWNER": owner,
        "GITHUB_SERVER_URL": context.server_url,
        "GITHUB_REF": "refs/heads/main",
        "RUNNER_TEMP": str(context.runner_temp),
        "ACTIONS_ID_TOKEN_REQUEST_URL": token_url,
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN": request_token,
    }


def bind_request_token(issuer: SandboxIssuer, context: RunnerContext) -> str:
    """Hand the job a token-request credential bound to its repository's claims."""
    claims = issuer.actions_claims(
        context.repo,
        run_id=str(context.run_id),
        run_attempt=str(context.run_attempt),
        workflow=context.workflow_name,
    )
    return issuer.issue_request_token(claims)


async def send_report(
    env: Mapping[str, str],
    job: PlannedJob,
    *,
    status: str,
    conclusion: str | None,
    check_run_id: int,
    callback_url: str,
    audience: str,
    client: httpx.AsyncClient,
    policy: RetryPolicy,
) -> PostOutcome:
    """Run the job's `crcr report --status … [--conclusion …]` step.

    Matrix legs pass `--job-name`, as the composite action's `job-name` input does;
    the check run id is what the action passes from `job.check_run_id`.
    """
    completed = status == "completed"
    inputs = ReportInputs(
        status=status,
        conclusion=conclusion,
        test_results=json.dumps(job.test_results) if completed and job.test_results else None,
        job_name=job.name if job.is_matrix_leg else None,
        check_run_id=str(check_run_id),
        provider="github",
    )
    prepared = prepare_report(inputs, env, now=datetime.now(UTC))
    return await deliver_report(
        prepared, env, callback_url=callback_url, audience=audience, client=client, policy=policy
    )

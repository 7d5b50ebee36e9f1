"""One simulated Actions job's runner environment, and its reports sent through `crcr report`.

The reports go through the reporter's own functions with the same environment a
GitHub Actions runner gives a job, so the demo and the end-to-end test exercise the
exact code a downstream workflow runs.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import xml.etree.ElementTree as ET
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from crcr.reporter.body import ReportError
from crcr.reporter.post import CallbackRefused, CallbackUndelivered, PostOutcome
from crcr.reporter.report import ReportInputs, deliver_report, prepare_report
from crcr.reporter.retry import RetryPolicy
from crcr.reporter.token import TokenError
from crcr.sandbox.oidc_issuer import SandboxIssuer
from crcr.sandbox.reporter_send import httpx_send
from crcr.sandbox.simulated_ci_model import PlannedJob
from crcr.sandbox.simulated_ci_state import JobState, ReportRecord

log = logging.getLogger(__name__)

REPORT_FAILURES = (ReportError, TokenError, CallbackRefused, CallbackUndelivered)


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


def write_failure_files(env: Mapping[str, str], job: PlannedJob) -> tuple[str | None, str | None]:
    """Write the job's JUnit report and triage verdict as its test and analyzer steps would.

    Returns the paths for `--failed-tests` and `--triage-verdict` (None for what the job
    does not have), so that the reporter reads them exactly as it would on a runner.
    """
    directory = Path(env["RUNNER_TEMP"])
    slug = re.sub(r"\W+", "-", job.name).strip("-")
    junit = verdict = None
    if job.failure.failed_tests:
        root = ET.Element("testsuites")
        suite = ET.SubElement(root, "testsuite", name=job.name)
        for name in job.failure.failed_tests:
            module, _, test = name.rpartition(".")
            case = ET.SubElement(suite, "testcase", classname=module or job.name, name=test)
            ET.SubElement(case, "failure", message=f"{test} failed on this device")
        junit = directory / f"junit-{slug}.xml"
        ET.ElementTree(root).write(junit, encoding="utf-8", xml_declaration=True)
    if job.failure.triage_verdict is not None:
        verdict = directory / f"triage-{slug}.json"
        verdict.write_text(json.dumps(job.failure.triage_verdict), encoding="utf-8")
    return (str(junit) if junit else None), (str(verdict) if verdict else None)


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
    failed_tests, verdict = write_failure_files(env, job) if completed else (None, None)
    inputs = ReportInputs(
        status=status,
        conclusion=conclusion,
        test_results=json.dumps(job.test_results) if completed and job.test_results else None,
        job_name=job.name if job.is_matrix_leg else None,
        check_run_id=str(check_run_id),
        provider="github",
        failed_tests=failed_tests,
        triage_verdict=verdict,
    )
    prepared = prepare_report(inputs, env, now=datetime.now(UTC))
    return await deliver_report(
        prepared,
        env,
        callback_url=callback_url,
        audience=audience,
        send=httpx_send(client),
        policy=policy,
    )


class JobReporter:
    """Sends the simulated jobs' reports and keeps the tally of how they went."""

    def __init__(
        self, *, callback_url: str, audience: str, policy: RetryPolicy, history: int
    ) -> None:
        self.callback_url = callback_url
        self.audience = audience
        self.policy = policy
        self.client: httpx.AsyncClient | None = None
        self.records: deque[ReportRecord] = deque(maxlen=history)
        self.sent = 0
        self.errors = 0
        self.last_error: str | None = None
        self._in_flight: set[asyncio.Future[None]] = set()

    def note_error(self, message: str) -> None:
        """Count a problem and remember it for the display."""
        self.errors += 1
        self.last_error = message

    async def report(
        self,
        context: RunnerContext,
        env: Mapping[str, str],
        job: JobState,
        status: str,
        conclusion: str | None,
    ) -> None:
        """Send one report; stopping the job does not cut the request off halfway."""
        sending = asyncio.ensure_future(self._send(context, env, job, status, conclusion))
        self._in_flight.add(sending)
        sending.add_done_callback(self._in_flight.discard)
        await asyncio.shield(sending)

    async def drain(self, grace: float) -> None:
        """Let reports already on the wire finish (for up to `grace` seconds).

        A request cut off mid-body would leave the relay with a half-read callback.
        """
        if self._in_flight:
            await asyncio.wait(set(self._in_flight), timeout=grace)

    async def _send(
        self,
        context: RunnerContext,
        env: Mapping[str, str],
        job: JobState,
        status: str,
        conclusion: str | None,
    ) -> None:
        assert self.client is not None, "JobReporter.client is set when the CI starts"
        where = f"{context.repo} {job.planned.name}"
        try:
            outcome = await send_report(
                env,
                job.planned,
                status=status,
                conclusion=conclusion,
                check_run_id=job.check_run_id,
                callback_url=self.callback_url,
                audience=self.audience,
                client=self.client,
                policy=self.policy,
            )
        except REPORT_FAILURES as exc:
            verdict = "error"
            self.note_error(f"{where}: {exc}")
            log.warning("simulated job report failed: %s: %s", where, exc)
        except Exception as exc:  # a bug, not a refusal: counted and logged, never silent
            verdict = "error"
            self.note_error(f"{where}: {exc!r}")
            log.exception("simulated job report crashed: %s", where)
        else:
            verdict = outcome.verdict
            self.sent += 1
        self.records.append(
            ReportRecord(
                context.repo,
                context.run_id,
                context.run_attempt,
                job.planned.name,
                status,
                conclusion,
                verdict,
            )
        )

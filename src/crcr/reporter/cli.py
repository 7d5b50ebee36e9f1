"""`crcr report`: the downstream CI's way to tell the relay how a job is going (SPEC §8).

Exit codes: 0 delivered (or dry run), 1 the relay refused it or it could not be
delivered, 2 the command was used wrongly (a bad option or missing CI variable).
"""

from __future__ import annotations

import os

import typer

from crcr.reporter.command import Delivery, run_report
from crcr.reporter.post import REQUEST_TIMEOUT
from crcr.reporter.report import ReportInputs
from crcr.reporter.retry import RetryPolicy
from crcr.reporter.token import DEFAULT_AUDIENCE


def report(
    status: str = typer.Option(..., help="in_progress or completed."),
    conclusion: str = typer.Option(
        "", help="With completed: success, failure, cancelled, timed_out, skipped, …"
    ),
    expected_conclusion: str = typer.Option(
        "", help="A canary probe job's expected conclusion (beats xfail/xcancel/xtimeout)."
    ),
    test_results: str = typer.Option(
        "", "--test-results", help='Counts as JSON: {"passed": 42, "failed": 0, "skipped": 3}.'
    ),
    artifact_url: str = typer.Option("", help="Where the job's logs and reports live."),
    failed_tests: str = typer.Option(
        "", help="A JUnit XML report or a JSON list of failed tests ({name, file, message})."
    ),
    triage_verdict: str = typer.Option(
        "", help="A JSON file with a triage verdict (the reference's schema v1), advisory."
    ),
    job_name: str = typer.Option(
        "", help="Job name for the check run (default GITHUB_JOB / BUILDKITE_LABEL)."
    ),
    check_run_id: str = typer.Option(
        "", envvar="CRCR_CHECK_RUN_ID", help="The job's check run id (GitHub: job.check_run_id)."
    ),
    callback_url: str = typer.Option(
        "", envvar="CRCR_CALLBACK_URL", help="The relay's callback URL (…/github/callback)."
    ),
    event_type: str = typer.Option("", help="nightly or periodic, for a self-report."),
    delivery_id: str = typer.Option("", help="The tested upstream commit SHA, for a self-report."),
    upstream_repo: str = typer.Option(
        "pytorch/pytorch", help="The upstream repository a self-report tested."
    ),
    payload_file: str = typer.Option(
        "", help="The dispatch client_payload as a JSON file (else CRCR_DISPATCH_PAYLOAD)."
    ),
    audience: str = typer.Option(DEFAULT_AUDIENCE, help="Audience of the OIDC token."),
    provider: str = typer.Option("auto", help="auto, github or buildkite."),
    timeout: float = typer.Option(
        REQUEST_TIMEOUT, min=1.0, help="Seconds per phase of each HTTP request."
    ),
    attempts: int = typer.Option(
        RetryPolicy.attempts, min=1, max=10, help="Tries before giving up (network errors, 5xx)."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the body; mint and send nothing."),
) -> None:
    """Report this CI job's status to the relay."""
    env = dict(os.environ)
    inputs = ReportInputs(
        status=status,
        conclusion=conclusion,
        test_results=test_results,
        artifact_url=artifact_url,
        job_name=job_name,
        check_run_id=check_run_id,
        event_type=event_type,
        delivery_id=delivery_id,
        payload_file=payload_file,
        upstream_repo=upstream_repo,
        provider=provider,
        failed_tests=failed_tests,
        triage_verdict=triage_verdict,
        expected_conclusion=expected_conclusion,
    )
    result = run_report(
        inputs,
        env,
        Delivery(
            callback_url=callback_url,
            audience=audience,
            timeout=timeout,
            attempts=attempts,
            dry_run=dry_run,
        ),
    )
    if result.exit_code != 0:
        typer.echo(f"crcr report: {result.message}", err=True)
        raise typer.Exit(result.exit_code)


def register(app: typer.Typer) -> None:
    """Add `crcr report` to the CLI."""
    app.command(name="report")(report)

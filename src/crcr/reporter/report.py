"""One `crcr report`: gather the run, build the body, mint a token, deliver it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from crcr.reporter.body import (
    ReportError,
    build_callback_body,
    self_report_dispatch,
    validate_options,
)
from crcr.reporter.ci_env import (
    Provider,
    buildkite_conclusion,
    detect_provider,
    load_dispatch,
    run_context,
)
from crcr.reporter.failure_detail import read_failure_detail
from crcr.reporter.post import PostOutcome, post_callback
from crcr.reporter.retry import RetryPolicy, Sleep, real_sleep
from crcr.reporter.started import recall_started_at, remember_started_at, state_file
from crcr.reporter.token import FreshTokens, mint_token
from crcr.reporter.transport import Send


@dataclass(frozen=True)
class ReportInputs:
    """The `crcr report` options as typed; blank strings mean "not given"."""

    status: str
    conclusion: str | None = None
    test_results: str | None = None
    artifact_url: str | None = None
    job_name: str | None = None
    check_run_id: str | None = None
    event_type: str | None = None
    delivery_id: str | None = None
    payload_file: str | None = None
    upstream_repo: str = "pytorch/pytorch"
    provider: str = "auto"
    failed_tests: str | None = None
    triage_verdict: str | None = None
    expected_conclusion: str | None = None


@dataclass(frozen=True)
class PreparedReport:
    """A callback body ready to send, and where to note the job's start time."""

    provider: Provider
    body: dict[str, Any]
    started_file: Path | None
    warnings: tuple[str, ...] = ()
    """What was left out of the body and why (advisory detail never stops a report)."""


def choose_provider(name: str, env: Mapping[str, str]) -> Provider:
    """Resolve `--provider auto|github|buildkite`."""
    if name == "auto":
        return detect_provider(env)
    try:
        return Provider(name)
    except ValueError:
        raise ReportError(f"--provider must be auto, github or buildkite, got {name!r}") from None


def check_callback_url(url: str | None) -> str:
    """The relay's callback URL, which must be given and be http(s)."""
    url = (url or "").strip()
    if not url:
        raise ReportError("no callback URL: pass --callback-url or set CRCR_CALLBACK_URL")
    if not url.startswith(("https://", "http://")):
        raise ReportError(f"--callback-url must be an http(s) URL, got {url!r}")
    return url


def prepare_report(
    inputs: ReportInputs, env: Mapping[str, str], *, now: datetime
) -> PreparedReport:
    """Validate the inputs against the CI environment and build the SPEC §5 body."""
    # Mistakes in the options are reported before a missing CI environment, which is
    # what someone trying the command by hand wants to hear first.
    provider: Provider | None = None
    unknown_provider: ReportError | None = None
    try:
        provider = choose_provider(inputs.provider, env)
    except ReportError as exc:
        unknown_provider = exc
    conclusion = inputs.conclusion
    if (
        provider is Provider.BUILDKITE
        and inputs.status.strip() == "completed"
        and not (conclusion or "").strip()
    ):
        conclusion = buildkite_conclusion(env)
    options = validate_options(
        status=inputs.status,
        conclusion=conclusion,
        test_results=inputs.test_results,
        artifact_url=inputs.artifact_url,
        event_type=inputs.event_type,
        delivery_id=inputs.delivery_id,
        upstream_repo=inputs.upstream_repo,
        expected_conclusion=inputs.expected_conclusion,
    )
    if provider is None:
        assert unknown_provider is not None
        raise unknown_provider
    run = run_context(provider, env, job_name=inputs.job_name, check_run_id=inputs.check_run_id)
    if options.is_self_report:
        dispatch = self_report_dispatch(options)
    else:
        dispatch = load_dispatch(provider, env, payload_file=inputs.payload_file)
    started_file = state_file(env, str(dispatch["delivery_id"]), run)
    started_at = recall_started_at(started_file) if options.status == "completed" else None
    body = build_callback_body(options, run, dispatch, now=now, started_at=started_at)
    detail = read_failure_detail(inputs.failed_tests, inputs.triage_verdict)
    detail.apply(body["workflow"])
    return PreparedReport(provider, body, started_file, tuple(detail.warnings))


async def deliver_report(
    report: PreparedReport,
    env: Mapping[str, str],
    *,
    callback_url: str,
    audience: str,
    send: Send,
    policy: RetryPolicy | None = None,
    sleep: Sleep = real_sleep,
) -> PostOutcome:
    """Post the body with a fresh token; note the start time once the relay has it."""

    async def mint() -> str:
        return await mint_token(
            report.provider, env, audience, send=send, policy=policy, sleep=sleep
        )

    outcome = await post_callback(
        send, callback_url, report.body, FreshTokens(mint), policy=policy, sleep=sleep
    )
    workflow = report.body["workflow"]
    if workflow["status"] == "in_progress" and outcome.verdict != "ignored":
        remember_started_at(report.started_file, workflow["started_at"])
    return outcome

"""Read the reporting CI run (GitHub Actions or Buildkite) from its environment variables."""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from crcr.reporter.body import ReportError, RunContext, check_dispatch_payload

DISPATCH_PAYLOAD_VARIABLE = "CRCR_DISPATCH_PAYLOAD"


class Provider(str, enum.Enum):
    """The CI systems `crcr report` knows how to describe and mint tokens for."""

    GITHUB = "github"
    BUILDKITE = "buildkite"


def detect_provider(env: Mapping[str, str]) -> Provider:
    """Tell which CI system this process runs in, from the flags each one sets."""
    if env.get("GITHUB_ACTIONS") == "true":
        return Provider.GITHUB
    if env.get("BUILDKITE") == "true":
        return Provider.BUILDKITE
    raise ReportError(
        "cannot tell the CI system (neither GITHUB_ACTIONS nor BUILDKITE is 'true'); "
        "pass --provider github|buildkite"
    )


def _required(env: Mapping[str, str], name: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise ReportError(f"{name} is not set (is this running inside that CI system?)")
    return value


def github_run_context(
    env: Mapping[str, str], *, job_name: str | None = None, check_run_id: str | None = None
) -> RunContext:
    """Describe a GitHub Actions job from the default `GITHUB_*` variables.

    The job's own check run id is only in the `job.check_run_id` expression context, so
    the composite action passes it in; without it the id falls back to
    `<run_id>-<run_attempt>`, as the reference action does, so a job keeps one HUD row.
    """
    run_id = _required(env, "GITHUB_RUN_ID")
    run_attempt = env.get("GITHUB_RUN_ATTEMPT", "").strip() or "1"
    server = env.get("GITHUB_SERVER_URL", "").strip() or "https://github.com"
    repository = _required(env, "GITHUB_REPOSITORY")
    return RunContext(
        workflow_name=_required(env, "GITHUB_WORKFLOW"),
        run_url=f"{server.rstrip('/')}/{repository}/actions/runs/{run_id}",
        run_id=run_id,
        run_attempt=run_attempt,
        job_name=(job_name or "").strip() or _required(env, "GITHUB_JOB"),
        check_run_id=(check_run_id or "").strip() or f"{run_id}-{run_attempt}",
    )


def buildkite_run_context(
    env: Mapping[str, str], *, job_name: str | None = None, check_run_id: str | None = None
) -> RunContext:
    """Describe a Buildkite job from the agent's `BUILDKITE_*` variables.

    Build ids are UUIDs, so run ids are opaque strings. A job retry keeps the build
    but bumps `BUILDKITE_RETRY_COUNT` (0 on the first try), hence attempt = count + 1.
    The workflow name is the pipeline slug, as in the reference's Buildkite wrapper,
    so check-run names stay stable when a pipeline is renamed.
    """
    build_id = _required(env, "BUILDKITE_BUILD_ID")
    retry_count = env.get("BUILDKITE_RETRY_COUNT", "").strip() or "0"
    if not retry_count.isdigit():
        raise ReportError(f"BUILDKITE_RETRY_COUNT must be a number, got {retry_count!r}")
    run_attempt = str(int(retry_count) + 1)
    workflow_name = (
        env.get("BUILDKITE_PIPELINE_SLUG", "").strip()
        or env.get("BUILDKITE_PIPELINE_NAME", "").strip()
    )
    if not workflow_name:
        raise ReportError("BUILDKITE_PIPELINE_SLUG is not set (is this a Buildkite job?)")
    name = (
        (job_name or "").strip()
        or env.get("BUILDKITE_LABEL", "").strip()
        or env.get("BUILDKITE_STEP_KEY", "").strip()
    )
    if not name:
        raise ReportError("no job name: pass --job-name (BUILDKITE_LABEL is not set)")
    return RunContext(
        workflow_name=workflow_name,
        run_url=_required(env, "BUILDKITE_BUILD_URL"),
        run_id=build_id,
        run_attempt=run_attempt,
        job_name=name,
        check_run_id=(check_run_id or "").strip()
        or env.get("BUILDKITE_JOB_ID", "").strip()
        or f"{build_id}-{run_attempt}",
    )


def run_context(
    provider: Provider,
    env: Mapping[str, str],
    *,
    job_name: str | None = None,
    check_run_id: str | None = None,
) -> RunContext:
    """Describe the reporting job for whichever CI system runs it."""
    if provider is Provider.GITHUB:
        return github_run_context(env, job_name=job_name, check_run_id=check_run_id)
    return buildkite_run_context(env, job_name=job_name, check_run_id=check_run_id)


def buildkite_conclusion(env: Mapping[str, str]) -> str | None:
    """Derive a conclusion from the command's exit status, in a Buildkite post-command hook."""
    exit_status = env.get("BUILDKITE_COMMAND_EXIT_STATUS", "").strip()
    if not exit_status:
        return None
    return "success" if exit_status == "0" else "failure"


def _load_json(text: str, source: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(f"{source}: not valid JSON ({exc.msg})") from None


def _read_file(path: str, source: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ReportError(f"{source}: cannot read {path} ({exc.strerror})") from None


def load_dispatch(
    provider: Provider, env: Mapping[str, str], *, payload_file: str | None = None
) -> dict[str, Any]:
    """Find the dispatch's `client_payload` this run was started with.

    An explicit `--payload-file` wins, then `CRCR_DISPATCH_PAYLOAD` (JSON text, the way
    to hand a dispatch to a Buildkite build), then, on GitHub Actions, the
    `repository_dispatch` event file at `GITHUB_EVENT_PATH`.
    """
    if payload_file:
        source = "--payload-file"
        return check_dispatch_payload(
            _load_json(_read_file(payload_file, source), source), source=source
        )
    inline = env.get(DISPATCH_PAYLOAD_VARIABLE, "").strip()
    if inline:
        source = DISPATCH_PAYLOAD_VARIABLE
        return check_dispatch_payload(_load_json(inline, source), source=source)
    if provider is Provider.BUILDKITE:
        raise ReportError(
            f"no dispatch payload: pass --payload-file or set {DISPATCH_PAYLOAD_VARIABLE} "
            "(or --event-type nightly|periodic --delivery-id SHA for a self-report)"
        )
    event_path = _required(env, "GITHUB_EVENT_PATH")
    event = _load_json(_read_file(event_path, "GITHUB_EVENT_PATH"), "GITHUB_EVENT_PATH")
    if not isinstance(event, dict) or "client_payload" not in event:
        event_name = env.get("GITHUB_EVENT_NAME", "unknown")
        raise ReportError(
            f"this run was not started by a relay dispatch (event {event_name!r} has no "
            "client_payload); use --event-type nightly|periodic --delivery-id SHA for a self-report"
        )
    return check_dispatch_payload(event["client_payload"], source="GITHUB_EVENT_PATH")

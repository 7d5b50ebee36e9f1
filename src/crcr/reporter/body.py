"""Build the SPEC §5 callback body from validated report options and the CI run."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal

SCHEMA_VERSION = "1"
SELF_REPORT_EVENT_TYPES = ("nightly", "periodic")
STATUSES = ("in_progress", "completed")
# What GitHub accepts as a check-run conclusion (less `stale`, which only GitHub sets):
# the relay turns these into upstream check runs (SPEC §7).
CONCLUSIONS = (
    "success",
    "failure",
    "cancelled",
    "timed_out",
    "skipped",
    "neutral",
    "action_required",
)
TEST_RESULT_COUNTS = ("passed", "failed", "skipped")
_UPSTREAM_SHA = re.compile(r"[0-9a-fA-F]{7,40}")

Status = Literal["in_progress", "completed"]


class ReportError(ValueError):
    """The report cannot be built; the message is one line naming the input at fault."""


@dataclass(frozen=True)
class ReportOptions:
    """What the caller of `crcr report` says about the job, already validated."""

    status: Status
    conclusion: str | None = None
    test_results: dict[str, int] | None = None
    artifact_url: str | None = None
    event_type: str | None = None
    delivery_id: str | None = None
    upstream_repo: str = "pytorch/pytorch"
    expected_conclusion: str | None = None
    """What a canary probe job should conclude (SPEC §13), beating its name's `xfail`/…"""

    @property
    def is_self_report(self) -> bool:
        """True for nightly/periodic reports, which answer no dispatch (SPEC §5.5)."""
        return self.delivery_id is not None


@dataclass(frozen=True)
class RunContext:
    """The CI run reporting back, as its CI system describes it."""

    workflow_name: str
    run_url: str
    run_id: str
    run_attempt: str
    job_name: str
    check_run_id: str


def _blank_to_none(value: str | None) -> str | None:
    if value is None:
        return None
    stripped = value.strip()
    return stripped or None


def parse_test_results(raw: str) -> dict[str, int]:
    """Parse `--test-results` JSON into the `{"passed", "failed", "skipped"}` counts."""
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ReportError(f"--test-results: not valid JSON ({exc.msg})") from None
    if not isinstance(parsed, dict):
        raise ReportError('--test-results: expected a JSON object like {"passed": 1, ...}')
    unknown = sorted(set(parsed) - set(TEST_RESULT_COUNTS))
    if unknown:
        allowed = ", ".join(TEST_RESULT_COUNTS)
        raise ReportError(f"--test-results: unknown key {unknown[0]!r} (allowed: {allowed})")
    counts: dict[str, int] = {}
    for key in TEST_RESULT_COUNTS:
        if key not in parsed:
            raise ReportError(f"--test-results: missing {key!r}")
        value = parsed[key]
        # bool is an int subclass in Python; `true` is not a test count.
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ReportError(
                f"--test-results: {key!r} must be a non-negative integer, got {value!r}"
            )
        counts[key] = value
    return counts


def validate_options(
    *,
    status: str,
    conclusion: str | None = None,
    test_results: str | None = None,
    artifact_url: str | None = None,
    event_type: str | None = None,
    delivery_id: str | None = None,
    upstream_repo: str = "pytorch/pytorch",
    expected_conclusion: str | None = None,
) -> ReportOptions:
    """Check the raw `crcr report` inputs and return them as `ReportOptions`.

    Blank strings count as absent, because the composite action passes every
    input through, set or not.
    """
    status = status.strip()
    if status not in STATUSES:
        raise ReportError(f"--status must be in_progress or completed, got {status!r}")
    checked_status: Status = "in_progress" if status == "in_progress" else "completed"

    conclusion = _blank_to_none(conclusion)
    if checked_status == "completed":
        if conclusion is None:
            raise ReportError("--conclusion is required with --status completed")
        conclusion = conclusion.lower()
        if conclusion not in CONCLUSIONS:
            raise ReportError(
                f"--conclusion must be one of {', '.join(CONCLUSIONS)}, got {conclusion!r}"
            )
    elif conclusion is not None:
        raise ReportError("--conclusion is only allowed with --status completed")

    event_type = _blank_to_none(event_type)
    delivery_id = _blank_to_none(delivery_id)
    if (event_type is None) != (delivery_id is None):
        raise ReportError(
            "--event-type and --delivery-id go together (nightly/periodic self-reports); "
            "dispatched runs take both from the dispatch"
        )
    if event_type is not None and delivery_id is not None:
        if event_type not in SELF_REPORT_EVENT_TYPES:
            raise ReportError(f"--event-type must be nightly or periodic, got {event_type!r}")
        if not _UPSTREAM_SHA.fullmatch(delivery_id):
            raise ReportError(
                "--delivery-id must be the tested upstream commit SHA (7-40 hex characters), "
                f"got {delivery_id!r}"
            )
        if checked_status != "completed":
            raise ReportError(f"{event_type} self-reports are sent once, with --status completed")

    artifact_url = _blank_to_none(artifact_url)
    if artifact_url is not None and not artifact_url.startswith(("https://", "http://")):
        raise ReportError(f"--artifact-url must be an http(s) URL, got {artifact_url!r}")

    expected = _blank_to_none(expected_conclusion)
    if expected is not None:
        expected = expected.lower()
        if expected not in CONCLUSIONS:
            raise ReportError(
                f"--expected-conclusion must be one of {', '.join(CONCLUSIONS)}, got {expected!r}"
            )

    raw_results = _blank_to_none(test_results)
    return ReportOptions(
        status=checked_status,
        conclusion=conclusion,
        test_results=parse_test_results(raw_results) if raw_results is not None else None,
        artifact_url=artifact_url,
        event_type=event_type,
        delivery_id=delivery_id,
        upstream_repo=upstream_repo,
        expected_conclusion=expected,
    )


def check_dispatch_payload(client_payload: object, *, source: str) -> dict[str, Any]:
    """Check that a dispatch's `client_payload` is what the relay sent (SPEC §4).

    The body is the payload echoed back, so a malformed one is caught here with a
    message naming where it came from, rather than as a 400 from the relay.
    """
    if not isinstance(client_payload, dict):
        raise ReportError(f"{source}: client_payload must be a JSON object")
    for field in ("event_type", "delivery_id"):
        value = client_payload.get(field)
        if not isinstance(value, str) or not value:
            raise ReportError(f"{source}: client_payload.{field} must be a non-empty string")
    if not isinstance(client_payload.get("payload"), dict):
        raise ReportError(f"{source}: client_payload.payload must be a JSON object")
    return client_payload


def self_report_dispatch(options: ReportOptions) -> dict[str, Any]:
    """The stand-in dispatch of a nightly/periodic run: the upstream commit it tested."""
    assert options.event_type is not None and options.delivery_id is not None
    return {
        "event_type": options.event_type,
        "delivery_id": options.delivery_id,
        "payload": {
            "repository": {"full_name": options.upstream_repo},
            "head_sha": options.delivery_id,
        },
    }


def iso_timestamp(moment: datetime) -> str:
    """Format a moment as ISO-8601 UTC with milliseconds (queue times have 3 decimals)."""
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def build_callback_body(
    options: ReportOptions,
    run: RunContext,
    dispatch: dict[str, Any],
    *,
    now: datetime,
    started_at: str | None = None,
) -> dict[str, Any]:
    """Echo the dispatch with a `workflow` object added (SPEC §5, schema version 1).

    `started_at` is the time this job reported `in_progress`, when it is known; an
    `in_progress` report starts now.
    """
    timestamp = iso_timestamp(now)
    workflow: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "status": options.status,
        "conclusion": options.conclusion,
        "name": run.workflow_name,
        "url": run.run_url,
        "run_id": run.run_id,
        "run_attempt": run.run_attempt,
        "job_name": run.job_name,
        "check_run_id": run.check_run_id,
        "started_at": timestamp if options.status == "in_progress" else started_at,
        "completed_at": timestamp if options.status == "completed" else None,
    }
    if options.test_results is not None:
        workflow["test_results"] = dict(options.test_results)
    if options.artifact_url is not None:
        workflow["artifact_url"] = options.artifact_url
    if options.expected_conclusion is not None:
        workflow["expected_conclusion"] = options.expected_conclusion
    body = {key: value for key, value in dispatch.items() if key != "workflow"}
    body["workflow"] = workflow
    return body

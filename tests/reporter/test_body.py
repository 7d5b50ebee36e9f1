"""The callback body is the dispatch echoed back with a schema-1 `workflow` object."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from crcr.reporter.body import (
    ReportError,
    RunContext,
    build_callback_body,
    check_dispatch_payload,
    iso_timestamp,
    parse_test_results,
    self_report_dispatch,
    validate_options,
)

NOW = datetime(2024, 6, 1, 12, 30, 5, 123456, tzinfo=UTC)
RUN = RunContext(
    workflow_name="XPU CI",
    run_url="https://github.com/intel/xpu-backend/actions/runs/9876543210",
    run_id="9876543210",
    run_attempt="2",
    job_name="test (xpu, 1)",
    check_run_id="27182818284",
)
DISPATCH = {
    "event_type": "pull_request",
    "delivery_id": "7f0e4c2a-3b1d-11ef-9d6e-2a8f1c4b5e61",
    "payload": {"number": 131072, "pull_request": {"head": {"sha": "9f8e7d6c"}}},
}
SHA = "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432"


def test_in_progress_body_echoes_the_dispatch_and_starts_now() -> None:
    options = validate_options(status="in_progress")
    body = build_callback_body(options, RUN, DISPATCH, now=NOW)
    assert {k: body[k] for k in ("event_type", "delivery_id", "payload")} == DISPATCH
    assert body["workflow"] == {
        "schema_version": "1",
        "status": "in_progress",
        "conclusion": None,
        "name": "XPU CI",
        "url": "https://github.com/intel/xpu-backend/actions/runs/9876543210",
        "run_id": "9876543210",
        "run_attempt": "2",
        "job_name": "test (xpu, 1)",
        "check_run_id": "27182818284",
        "started_at": "2024-06-01T12:30:05.123Z",
        "completed_at": None,
    }


def test_completed_body_carries_conclusion_counts_artifacts_and_the_known_start() -> None:
    options = validate_options(
        status="completed",
        conclusion="failure",
        test_results='{"passed": 42, "failed": 1, "skipped": 3}',
        artifact_url="https://ci.example.org/logs/1",
    )
    body = build_callback_body(options, RUN, DISPATCH, now=NOW, started_at="2024-06-01T12:00:00Z")
    workflow = body["workflow"]
    assert workflow["status"] == "completed"
    assert workflow["conclusion"] == "failure"
    assert workflow["started_at"] == "2024-06-01T12:00:00Z"
    assert workflow["completed_at"] == "2024-06-01T12:30:05.123Z"
    assert workflow["test_results"] == {"passed": 42, "failed": 1, "skipped": 3}
    assert workflow["artifact_url"] == "https://ci.example.org/logs/1"


def test_completed_body_without_a_known_start_says_null_and_omits_optional_fields() -> None:
    body = build_callback_body(
        validate_options(status="completed", conclusion="success"), RUN, DISPATCH, now=NOW
    )
    assert body["workflow"]["started_at"] is None
    assert "test_results" not in body["workflow"]
    assert "artifact_url" not in body["workflow"]


def test_a_workflow_key_in_the_dispatch_is_replaced_not_merged() -> None:
    dispatch = {**DISPATCH, "workflow": {"status": "forged"}}
    body = build_callback_body(validate_options(status="in_progress"), RUN, dispatch, now=NOW)
    assert body["workflow"]["status"] == "in_progress"
    assert "forged" not in str(body)


def test_timestamps_are_utc_with_milliseconds_and_a_z() -> None:
    later = datetime(2024, 6, 1, 14, 30, 5, 999000, tzinfo=timezone(timedelta(hours=2)))
    assert iso_timestamp(later) == "2024-06-01T12:30:05.999Z"


def test_a_nightly_self_report_stands_in_for_a_dispatch_with_the_tested_commit() -> None:
    options = validate_options(
        status="completed", conclusion="success", event_type="nightly", delivery_id=SHA
    )
    assert options.is_self_report
    body = build_callback_body(options, RUN, self_report_dispatch(options), now=NOW)
    assert body["event_type"] == "nightly"
    assert body["delivery_id"] == SHA
    assert body["payload"] == {"repository": {"full_name": "pytorch/pytorch"}, "head_sha": SHA}


def test_blank_inputs_count_as_absent_as_the_composite_action_passes_them() -> None:
    options = validate_options(
        status=" in_progress ",
        conclusion="",
        test_results="  ",
        artifact_url="",
        event_type="",
        delivery_id="",
    )
    assert (options.conclusion, options.test_results, options.artifact_url) == (None, None, None)
    assert not options.is_self_report


def test_conclusion_from_job_status_is_accepted_in_any_case() -> None:
    assert validate_options(status="completed", conclusion="Cancelled").conclusion == "cancelled"


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"status": "queued"}, "--status must be in_progress or completed, got 'queued'"),
        ({"status": "completed"}, "--conclusion is required with --status completed"),
        (
            {"status": "in_progress", "conclusion": "success"},
            "--conclusion is only allowed with --status completed",
        ),
        ({"status": "completed", "conclusion": "green"}, "--conclusion must be one of success,"),
        (
            {"status": "completed", "conclusion": "success", "event_type": "nightly"},
            "--event-type and --delivery-id go together",
        ),
        (
            {"status": "completed", "conclusion": "success", "delivery_id": SHA},
            "--event-type and --delivery-id go together",
        ),
        (
            {
                "status": "completed",
                "conclusion": "success",
                "event_type": "pull_request",
                "delivery_id": SHA,
            },
            "--event-type must be nightly or periodic, got 'pull_request'",
        ),
        (
            {"status": "completed", "conclusion": "success", "event_type": "nightly"}
            | {"delivery_id": "main"},
            "--delivery-id must be the tested upstream commit SHA (7-40 hex characters)",
        ),
        (
            {"status": "in_progress", "event_type": "periodic", "delivery_id": SHA},
            "periodic self-reports are sent once, with --status completed",
        ),
        (
            {"status": "in_progress", "artifact_url": "s3://bucket/logs"},
            "--artifact-url must be an http(s) URL, got 's3://bucket/logs'",
        ),
    ],
)
def test_bad_options_get_one_line_naming_the_option(inputs: dict[str, str], message: str) -> None:
    with pytest.raises(ReportError) as caught:
        validate_options(**inputs)
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("{passed: 1}", "--test-results: not valid JSON"),
        ("[1, 0, 0]", "--test-results: expected a JSON object"),
        ('{"passed": 1, "failed": 0}', "--test-results: missing 'skipped'"),
        ('{"passed": 1, "failed": 0, "skipped": 0, "flaky": 2}', "--test-results: unknown key"),
        ('{"passed": -1, "failed": 0, "skipped": 0}', "--test-results: 'passed' must be a non-"),
        ('{"passed": 1.5, "failed": 0, "skipped": 0}', "--test-results: 'passed' must be a non-"),
        ('{"passed": true, "failed": 0, "skipped": 0}', "--test-results: 'passed' must be a non"),
        ('{"passed": "3", "failed": 0, "skipped": 0}', "--test-results: 'passed' must be a non-"),
    ],
)
def test_test_results_must_be_three_non_negative_counts(raw: str, message: str) -> None:
    with pytest.raises(ReportError) as caught:
        parse_test_results(raw)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize(
    ("client_payload", "message"),
    [
        (None, "event file: client_payload must be a JSON object"),
        ({"delivery_id": "d", "payload": {}}, "event file: client_payload.event_type must be"),
        ({"event_type": "push", "delivery_id": "", "payload": {}}, "event file: client_payload.d"),
        ({"event_type": "push", "delivery_id": "d", "payload": []}, "event file: client_payload.p"),
    ],
)
def test_a_malformed_dispatch_is_named_by_its_source(client_payload: object, message: str) -> None:
    with pytest.raises(ReportError) as caught:
        check_dispatch_payload(client_payload, source="event file")
    assert str(caught.value).startswith(message)

"""The typed report handed to the HUD in process is the row the HTTP route would store.

Two roads into the HUD (`hud_report` in process, `parse_result_body` over HTTP and from
the retry queue) must never store different rows for one callback.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from crcr.hud.write.ingest import parse_result_body
from crcr.relay.callback.hud_report import hud_report
from crcr.relay.callback.schema import parse_callback
from crcr.relay.jobs.dispatch import UpstreamContext
from crcr.relay.results.body import build_hud_body, dispatch_section

PR = UpstreamContext("pytorch/pytorch", "pull_request", "a" * 40, 7)
NIGHTLY = UpstreamContext("pytorch/pytorch", "nightly", "b" * 40, None)
VERDICT = {"schema_version": 1, "category": "infra", "confidence": "high", "summary": "lost"}
FAILED = [{"name": "test_add", "file": "test/x.py", "message": "boom"}, {"name": "test_sub"}]

WORKFLOWS: dict[str, dict[str, Any]] = {
    "in progress, bare": {"status": "in_progress"},
    "completed with counts": {
        "status": "completed",
        "conclusion": "failure",
        "test_results": {"passed": 40, "failed": 2, "skipped": 3},
    },
    "some counts unset": {
        "status": "completed",
        "conclusion": "success",
        "test_results": {"passed": 5},
    },
    "failed tests only": {
        "status": "completed",
        "conclusion": "failure",
        "test_results": {"failed_tests": FAILED, "failed_tests_dropped": 4},
    },
    "a triage verdict": {
        "status": "completed",
        "conclusion": "failure",
        "triage_verdict": VERDICT,
    },
    "times with an offset and without a zone": {
        "status": "completed",
        "conclusion": "timed_out",
        "started_at": "2026-01-01T01:00:00+01:00",
        "completed_at": "2026-01-01T00:30:00",
    },
    "empty optionals": {
        "status": "in_progress",
        "conclusion": "",
        "check_run_id": None,
        "job_name": "",
        "started_at": "",
        "run_attempt": 3,
    },
    "links": {
        "status": "completed",
        "conclusion": "success",
        "url": "https://github.com/org/repo/actions/runs/9",
        "artifact_url": "https://example.com/artifacts/9.zip",
    },
}


def _callback(workflow: dict[str, Any], event_type: str = "pull_request") -> bytes:
    base = {"schema_version": "1", "name": "ci", "run_id": "9", "check_run_id": "456"}
    body = {"event_type": event_type, "delivery_id": "d-1", "payload": {}}
    return json.dumps({**body, "workflow": {**base, **workflow}}).encode()


@pytest.mark.parametrize("case", sorted(WORKFLOWS))
@pytest.mark.parametrize("context", [PR, NIGHTLY], ids=["job", "self-report"])
def test_the_report_equals_what_the_hud_makes_of_the_body(
    case: str, context: UpstreamContext
) -> None:
    callback = parse_callback(_callback(WORKFLOWS[case], context.event_type))
    timing = {"queue_time": 1.5, "execution_time": None}
    body = build_hud_body(
        verified_repo="org/backend",
        level="L3",
        dispatch=dispatch_section(context),
        callback_payload=callback.without_payload,
        **timing,
    )

    report = hud_report(
        callback, verified_repo="org/backend", level="L3", context=context, **timing
    )

    assert report == parse_result_body(body)
    assert report.job_key == parse_result_body(body).job_key


def test_the_cases_carry_the_detail_they_are_about() -> None:
    """Guards the table above: a case whose detail was dropped would compare None to None."""
    detail = {
        case: hud_report(
            parse_callback(_callback(WORKFLOWS[case])),
            verified_repo="org/backend",
            level="L3",
            context=PR,
            queue_time=None,
            execution_time=None,
        )
        for case in ("failed tests only", "a triage verdict")
    }
    assert detail["failed tests only"].failed_tests is not None
    assert detail["a triage verdict"].triage_verdict is not None

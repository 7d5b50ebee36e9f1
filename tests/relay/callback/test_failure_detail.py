"""Failed tests and triage verdicts ride a callback to the HUD bounded (SPEC §11).

Advisory detail never costs a job its result: a malformed verdict is dropped, said in
the log, and the callback accepted.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import L2_REPO, Relay, callback_body

from crcr.failure_detail.failed_tests import DROPPED_KEY
from crcr.relay.callback.schema import parse_callback

opener, signing_key, issuer, relay = (
    harness.opener,
    harness.signing_key,
    harness.issuer,
    harness.relay,
)

VERDICT = {
    "schema_version": "1",
    "category": "upstream",
    "confidence": "medium",
    "summary": "the new dispatch key broke aten::add on xpu",
    "suspected_upstream": {"pr": 123, "reason": "touches add"},
    "evidence": [{"job": "test", "log_url": "https://ci.example.org/run/1"}],
    "novel_field": "an analyzer from the future",
}


def completed_with(**workflow: Any) -> dict[str, Any]:
    body = callback_body("d-1", "completed", "failure")
    body["workflow"].update(workflow)
    return body


def forwarded_workflow(relay: Relay) -> dict[str, Any]:
    workflow: dict[str, Any] = relay.hud.received[-1]["untrusted"]["callback_payload"]["workflow"]
    return workflow


async def report_in_progress(relay: Relay) -> None:
    await relay.dispatch("d-1")
    assert (await relay.post(callback_body("d-1"))).json() == {"status": "accepted"}


async def test_failed_tests_reach_the_hud_bounded(relay: Relay) -> None:
    await report_in_progress(relay)
    failed = [
        {"name": f"test_{n}", "file": "test_ops.py", "message": "x" * 3000} for n in range(130)
    ]

    response = await relay.post(
        completed_with(test_results={"passed": 5, "failed": 130, "failed_tests": failed})
    )

    assert response.json() == {"status": "accepted"}
    results = forwarded_workflow(relay)["test_results"]
    assert results["failed"] == 130
    assert len(results["failed_tests"]) == 100
    assert results["failed_tests"][0] == {
        "name": "test_0",
        "file": "test_ops.py",
        "message": "x" * 2000,
    }
    assert results[DROPPED_KEY] == 30


async def test_a_triage_verdict_reaches_the_hud_sanitised(relay: Relay) -> None:
    await report_in_progress(relay)

    await relay.post(completed_with(triage_verdict=VERDICT))

    verdict = forwarded_workflow(relay)["triage_verdict"]
    assert verdict["schema_version"] == 1
    assert verdict["category"] == "upstream"
    assert "novel_field" not in verdict


@pytest.mark.parametrize(
    "verdict",
    [
        {**VERDICT, "category": "backend"},  # suspected_upstream needs category upstream
        {**VERDICT, "evidence": [{"log_url": "javascript:alert(document.cookie)"}]},
        {**VERDICT, "schema_version": 2},
        "the backend is fine",
    ],
    ids=["suspect-on-backend", "javascript-link", "schema-2", "a-string"],
)
async def test_a_bad_verdict_is_dropped_and_the_callback_still_accepted(
    relay: Relay, verdict: object, caplog: pytest.LogCaptureFixture
) -> None:
    await report_in_progress(relay)

    with caplog.at_level(logging.INFO, logger="crcr.relay.callback.endpoint"):
        response = await relay.post(completed_with(triage_verdict=verdict))

    assert response.status_code == 200 and response.json() == {"status": "accepted"}
    assert "triage_verdict" not in forwarded_workflow(relay)
    assert relay.hud.only_row()["conclusion"] == "failure"
    (record,) = [r for r in caplog.records if "triage_verdict dropped" in r.getMessage()]
    assert record.levelno == logging.WARNING
    assert "org2/l2-backend" in record.getMessage()


async def test_a_malformed_failed_test_list_is_dropped_and_the_counts_kept(relay: Relay) -> None:
    await report_in_progress(relay)

    response = await relay.post(
        completed_with(test_results={"passed": 1, "failed": 2, "failed_tests": "two of them"})
    )

    assert response.json() == {"status": "accepted"}
    assert forwarded_workflow(relay)["test_results"] == {"passed": 1, "failed": 2}


def test_the_problems_list_cannot_be_forged_by_the_body() -> None:
    body = completed_with(failure_detail_problems=["forged"], triage_verdict={"category": 1})

    workflow = parse_callback(json.dumps(body).encode()).body.workflow

    assert workflow.failure_detail_problems == [
        "triage_verdict dropped: schema_version: None is not supported (expected 1)"
    ]


def test_the_in_process_hud_copy_is_bounded_too() -> None:
    failed = [{"name": f"test_{n}", "duration": 1.5} for n in range(101)]
    body = completed_with(
        test_results={"failed": 101, "failed_tests": failed}, triage_verdict=VERDICT
    )

    workflow = parse_callback(json.dumps(body).encode()).without_payload["workflow"]

    assert workflow["test_results"]["failed_tests"][0] == {"name": "test_0"}
    assert workflow["test_results"][DROPPED_KEY] == 1
    assert workflow["triage_verdict"]["schema_version"] == 1
    assert "novel_field" not in workflow["triage_verdict"]
    assert "failure_detail_problems" not in workflow


async def test_invisible_format_characters_are_stripped_from_what_the_hud_shows(
    relay: Relay,
) -> None:
    # Issue 33 item 20: bidirectional overrides and zero-width characters were stored
    # and shown raw on HUD pages (as GitHub-bound text, they were already stripped).
    await relay.dispatch("d-1")
    body = callback_body("d-1", job_name="te\u200bst\u202e")
    body["workflow"]["name"] = "\u202ecrcr\u2066"
    body["workflow"]["test_results"] = {
        "failed": 1,
        "failed_tests": [{"name": "test_\u202eadd", "message": "line 1\nline\u200b 2"}],
    }

    response = await relay.post(body)

    assert response.json() == {"status": "accepted"}, response.text
    row = relay.hud.only_row()
    assert (row["workflow_name"], row["job_name"]) == ("crcr", "test")
    assert json.loads(row["failed_tests"])["tests"] == [
        {"name": "test_add", "message": "line 1\nline 2"}
    ]


@pytest.mark.parametrize("field", ["artifact_url", "url"])
@pytest.mark.parametrize("char", ["\u202e", "\u200b", "\u2066", "\ufeff"])
async def test_a_link_with_a_format_character_is_refused_naming_the_field(
    relay: Relay, field: str, char: str
) -> None:
    await relay.dispatch("d-1")
    body = callback_body("d-1")
    body["workflow"][field] = f"https://github.com/{L2_REPO}/actions/runs/9001/a{char}b"

    response = await relay.post(body)

    assert response.status_code == 400, response.text
    assert response.json()["detail"].startswith(f"workflow.{field}: must not contain")
    assert relay.hud.writes == 0

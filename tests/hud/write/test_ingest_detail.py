"""Failure detail in a results body: re-checked with the relay's rules, kept, never clobbered."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import Engine, select
from tests.hud.hud_bodies import completed, our_body

from crcr.hud.models import JobExecution
from crcr.hud.write.ingest import parse_result_body
from crcr.hud.write.writer import write_report
from crcr.web.refusal import Invalid

NOW = datetime(2026, 11, 20, 10, 0, tzinfo=UTC)
VERDICT = {
    "schema_version": 1,
    "category": "upstream",
    "confidence": "high",
    "summary": "conv2d regressed upstream",
    "suspected_upstream": {"pr": 101, "reason": "touches conv"},
    "evidence": [{"job": "test", "log_url": "https://ci.example/logs/1"}],
    "unknown_key": "dropped",
}


def failed_body(**workflow_extra: Any) -> dict[str, Any]:
    body = completed(our_body(), "failure")
    body["untrusted"]["callback_payload"]["workflow"].update(workflow_extra)
    return body


def confirmation(body: dict[str, Any], confirmed: bool, github: str | None) -> dict[str, Any]:
    """The relay's update body for the same row, after it asked GitHub."""
    update = copy.deepcopy(body)
    update["trusted"]["confirmed"] = confirmed
    update["trusted"]["confirmation"] = {
        "github_conclusion": github,
        "checked_at": "2026-11-20T10:06:00Z",
    }
    return update


def test_failed_tests_are_bounded_and_kept_as_json_with_the_dropped_count() -> None:
    tests = [{"name": f"test_{i}", "message": "x" * 5000, "extra": 1} for i in range(130)]
    report = parse_result_body(failed_body(test_results={"failed": 130, "failed_tests": tests}))

    stored = json.loads(report.failed_tests or "")
    assert len(stored["tests"]) == 100 and stored["dropped"] == 30
    assert stored["tests"][0] == {"name": "test_0", "message": "x" * 2000}


def test_a_failed_tests_value_that_is_not_a_list_is_left_out_and_the_result_kept() -> None:
    report = parse_result_body(failed_body(test_results={"failed": 1, "failed_tests": "oops"}))

    assert report.failed_tests is None and report.failed == 1


def test_a_triage_verdict_is_sanitised_as_the_relay_does() -> None:
    report = parse_result_body(failed_body(triage_verdict=VERDICT))

    stored = json.loads(report.triage_verdict or "")
    assert stored["category"] == "upstream" and "unknown_key" not in stored
    assert stored["suspected_upstream"]["pr"] == 101


@pytest.mark.parametrize(
    "log_url", ["javascript:alert(1)", "https://github.com@evil.example/", "https://a b/"]
)
def test_a_verdict_with_an_unsafe_log_link_is_dropped_whole(log_url: str) -> None:
    verdict = {**VERDICT, "evidence": [{"job": "test", "log_url": log_url}]}

    assert parse_result_body(failed_body(triage_verdict=verdict)).triage_verdict is None


@pytest.mark.parametrize(
    ("trusted", "field"),
    [
        ({"confirmed": "yes"}, "trusted.confirmed"),
        ({"confirmation": []}, "trusted.confirmation"),
        ({"confirmation": {"github_conclusion": 3}}, "trusted.confirmation.github_conclusion"),
    ],
)
def test_a_malformed_confirmation_is_refused_naming_the_field(
    trusted: dict[str, Any], field: str
) -> None:
    body = failed_body()
    body["trusted"].update(trusted)

    with pytest.raises(Invalid) as refused:
        parse_result_body(body)

    assert refused.value.status_code == 400 and field in refused.value.detail


def stored_row(engine: Engine) -> JobExecution:
    with engine.connect() as connection:
        [row] = connection.execute(select(JobExecution)).all()
    return row  # type: ignore[no-any-return]


def test_a_confirmation_is_stored_and_a_later_body_without_detail_keeps_everything(
    engine: Engine,
) -> None:
    first = failed_body(
        test_results={"failed": 1, "failed_tests": [{"name": "test_conv"}]},
        triage_verdict=VERDICT,
    )
    write_report(engine, parse_result_body(first), NOW)
    write_report(engine, parse_result_body(confirmation(first, False, "success")), NOW)

    bare = completed(our_body(), "failure")  # a redelivery carrying no detail at all
    assert write_report(engine, parse_result_body(bare), NOW) == "unchanged"

    row = stored_row(engine)
    assert row.confirmed is False and row.github_conclusion == "success"
    assert json.loads(row.failed_tests or "")["tests"] == [{"name": "test_conv"}]
    assert json.loads(row.triage_verdict or "")["category"] == "upstream"


def test_a_confirmed_conclusion_reads_back_as_a_boolean_through_the_write_path(
    engine: Engine,
) -> None:
    body = failed_body()
    write_report(engine, parse_result_body(confirmation(body, True, "failure")), NOW)
    write_report(engine, parse_result_body(body), NOW)

    assert stored_row(engine).confirmed is True

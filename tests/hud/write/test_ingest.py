"""Mapping a results body to a job report: field sources, validation, error messages."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest
from tests.hud.hud_bodies import our_body, reference_body

from crcr.hud.write.ingest import parse_result_body
from crcr.web.refusal import Invalid


def test_a_full_body_from_our_relay_maps_every_row_field() -> None:
    body = our_body(
        test_results={"passed": 40, "failed": 1, "skipped": 3}, artifact_url="https://a/x"
    )

    report = parse_result_body(body)

    assert report.downstream_repo == "acme/xpu-backend"
    assert report.downstream_repo_level == "L3"
    assert (report.upstream_repo, report.event_type) == ("pytorch/pytorch", "pull_request")
    assert (report.pr_number, report.head_sha) == (101, "a" * 40)
    assert (report.workflow_name, report.job_name) == ("CI", "test")
    assert (report.run_id, report.run_attempt, report.check_run_id) == ("9001", 1, "5001")
    assert report.started_at == datetime(2026, 11, 20, 10, 0, tzinfo=UTC)
    assert report.queue_time == 12.5 and report.execution_time is None
    assert (report.passed, report.failed, report.skipped, report.total_tests) == (40, 1, 3, 44)
    assert report.artifact_url == "https://a/x"
    assert report.workflow_run_url == "https://github.com/acme/xpu-backend/actions/runs/9001"


def test_trusted_dispatch_wins_over_the_echoed_payload() -> None:
    body = our_body(pr_number=7, head_sha="b" * 40)
    payload = body["untrusted"]["callback_payload"]["payload"]
    payload["pull_request"] = {"number": 666, "head": {"sha": "f" * 40}}

    report = parse_result_body(body)

    assert (report.pr_number, report.head_sha) == (7, "b" * 40)


def test_a_reference_relay_body_takes_the_context_from_the_echoed_payload() -> None:
    report = parse_result_body(reference_body(pr_number=55, head_sha="c" * 40))

    assert report.upstream_repo == "pytorch/pytorch"
    assert (report.event_type, report.pr_number, report.head_sha) == ("pull_request", 55, "c" * 40)


def test_a_reference_push_body_takes_the_sha_from_after() -> None:
    body = reference_body(event_type="push")
    body["untrusted"]["callback_payload"]["payload"] = {
        "repository": {"full_name": "pytorch/pytorch"},
        "after": "d" * 40,
        "ref": "refs/heads/main",
    }

    report = parse_result_body(body)

    assert (report.event_type, report.pr_number, report.head_sha) == ("push", 0, "d" * 40)


def test_a_nightly_self_report_tests_the_sha_in_its_delivery_id() -> None:
    body = reference_body(event_type="nightly", delivery_id="e" * 40)
    body["untrusted"]["callback_payload"]["payload"] = {}

    report = parse_result_body(body)

    assert (report.event_type, report.pr_number, report.head_sha) == ("nightly", 0, "e" * 40)


def _without(path: str) -> dict[str, Any]:
    body = copy.deepcopy(our_body())
    *parents, leaf = path.split(".")
    node = body
    for name in parents:
        node = node[name]
    del node[leaf]
    return body


@pytest.mark.parametrize(
    "missing",
    [
        "trusted",
        "trusted.verified_repo",
        "untrusted",
        "untrusted.callback_payload",
        "untrusted.callback_payload.delivery_id",
        "untrusted.callback_payload.workflow",
        "untrusted.callback_payload.workflow.status",
        "untrusted.callback_payload.workflow.name",
        "untrusted.callback_payload.workflow.run_id",
        "trusted.dispatch.event_type",
    ],
)
def test_a_missing_required_field_is_named(missing: str) -> None:
    with pytest.raises(Invalid) as rejected:
        parse_result_body(_without(missing))

    assert rejected.value.status_code == 400
    assert missing in rejected.value.detail


def test_without_dispatch_the_echoed_event_type_is_required() -> None:
    body = reference_body()
    del body["untrusted"]["callback_payload"]["event_type"]

    with pytest.raises(Invalid, match=r"untrusted\.callback_payload\.event_type"):
        parse_result_body(body)


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("status", "exploded", "workflow.status"),
        ("status", 3, "workflow.status"),
        ("conclusion", "DROP TABLE", "workflow.conclusion"),
        ("run_attempt", "zero", "workflow.run_attempt"),
        ("started_at", "yesterday", "workflow.started_at"),
        ("test_results", {"passed": -1}, "test_results.passed"),
        ("test_results", [1], "workflow.test_results"),
    ],
)
def test_an_invalid_workflow_field_is_named(field: str, value: Any, named: str) -> None:
    body = our_body()
    body["untrusted"]["callback_payload"]["workflow"][field] = value

    with pytest.raises(Invalid) as rejected:
        parse_result_body(body)

    assert rejected.value.status_code == 400
    assert named in rejected.value.detail


@pytest.mark.parametrize(
    ("trusted_change", "named"),
    [
        ({"verified_repo": "not a repo"}, "trusted.verified_repo"),
        ({"ci_metrics": {"queue_time": -4}}, "trusted.ci_metrics.queue_time"),
        ({"ci_metrics": {"queue_time": "fast"}}, "trusted.ci_metrics.queue_time"),
        ({"ci_metrics": "none"}, "trusted.ci_metrics"),
    ],
)
def test_an_invalid_trusted_field_is_named(trusted_change: dict[str, Any], named: str) -> None:
    body = our_body()
    body["trusted"].update(trusted_change)

    with pytest.raises(Invalid, match=named.replace(".", r"\.")):
        parse_result_body(body)


def test_a_body_that_is_not_an_object_is_rejected() -> None:
    with pytest.raises(Invalid, match="body must be an object"):
        parse_result_body([1, 2])


@pytest.mark.parametrize(
    ("where", "key", "value", "problem"),
    [
        ("dispatch", "pr_number", 2**31, "trusted.dispatch.pr_number must be an integer"),
        ("dispatch", "pr_number", "9" * 30, "trusted.dispatch.pr_number must be an integer"),
        (
            "metrics",
            "queue_time",
            10**400,
            "trusted.ci_metrics.queue_time must be a number of seconds",
        ),
        ("results", "passed", 2**63, "test_results.passed must be an integer from 0"),
    ],
)
def test_numbers_past_what_a_column_holds_are_refused_naming_the_field(
    where: str, key: str, value: Any, problem: str
) -> None:
    # Each was stored as a 500 (an overflow in the driver or in float()); the document
    # now gives the bounds and the fuzzing test holds the route to them.
    body = our_body()
    target = {
        "dispatch": body["trusted"]["dispatch"],
        "metrics": body["trusted"]["ci_metrics"],
        "results": body["untrusted"]["callback_payload"]["workflow"].setdefault("test_results", {}),
    }[where]
    target[key] = value

    with pytest.raises(Invalid) as refused:
        parse_result_body(body)
    assert problem in str(refused.value)


def test_an_integral_float_is_read_as_its_integer() -> None:
    body = our_body()
    body["trusted"]["dispatch"]["pr_number"] = 101.0
    body["untrusted"]["callback_payload"]["workflow"]["run_id"] = 9001.0

    report = parse_result_body(body)

    assert (report.pr_number, report.run_id) == (101, "9001")


def test_format_characters_in_names_from_another_relay_are_dropped() -> None:
    # Issue 33 item 20: PyTorch's relay passes a downstream's names on unchecked.
    body = reference_body()
    workflow = body["untrusted"]["callback_payload"]["workflow"]
    workflow["name"], workflow["job_name"] = "\u202eci", "te\u200bst"

    report = parse_result_body(body)

    assert (report.workflow_name, report.job_name) == ("ci", "test")


def test_a_superseded_jobs_body_carries_the_newer_head_to_the_row() -> None:
    body = our_body(status="completed", conclusion="failure")
    body["trusted"]["superseded_by"] = "c" * 40

    assert parse_result_body(body).superseded_by == "c" * 40
    assert parse_result_body(our_body()).superseded_by is None  # the reference relay's


@pytest.mark.parametrize("value", ["not-a-sha", "c" * 65, 12, "abc"])
def test_a_superseded_by_that_is_no_commit_is_refused_naming_the_field(value: object) -> None:
    body = our_body()
    body["trusted"]["superseded_by"] = value

    with pytest.raises(Invalid, match=r"trusted\.superseded_by"):
        parse_result_body(body)

"""Both bounds applied to one `workflow` object; neither refuses it."""

from __future__ import annotations

from crcr.failure_detail.workflow import sanitise_failure_detail

VERDICT = {"schema_version": 1, "category": "flake", "confidence": "low", "summary": "retry"}


def test_a_clean_workflow_comes_back_equal_and_without_problems() -> None:
    workflow = {
        "status": "completed",
        "test_results": {"passed": 1, "failed": 1, "failed_tests": [{"name": "t"}]},
        "triage_verdict": VERDICT,
    }
    assert sanitise_failure_detail(workflow) == (workflow, [])


def test_a_bad_verdict_is_removed_and_the_reason_given() -> None:
    workflow, problems = sanitise_failure_detail(
        {"status": "completed", "triage_verdict": {**VERDICT, "category": "aliens"}}
    )
    assert workflow == {"status": "completed"}
    assert problems == [
        "triage_verdict dropped: category: must be one of upstream, backend, infra, flake, unknown"
    ]


def test_a_malformed_failed_test_list_is_removed_and_the_rest_kept() -> None:
    workflow, problems = sanitise_failure_detail(
        {"test_results": {"failed": 2, "failed_tests": "two"}, "triage_verdict": VERDICT}
    )
    assert workflow == {"test_results": {"failed": 2}, "triage_verdict": VERDICT}
    assert problems == ["test_results.failed_tests must be a list"]


def test_the_input_is_not_changed() -> None:
    original = {"test_results": {"failed_tests": [{"name": "t", "x": 1}]}}
    sanitise_failure_detail(original)
    assert original == {"test_results": {"failed_tests": [{"name": "t", "x": 1}]}}

"""Classifying one failed PR job against its baseline: the SPEC §11 table, without I/O."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from crcr.hud.baseline.verdicts import (
    ALREADY_FAILING,
    FLAKY,
    NEW,
    UNKNOWN,
    Run,
    Verdict,
    against_baseline,
    classify,
    passed_on_retry,
)

T0 = datetime(2026, 11, 20, 10, 0, tzinfo=UTC)
PR_FAIL = Run(
    row_key="pr-1",
    repo="acme/xpu",
    workflow="CI",
    job="test",
    run_id="77",
    run_attempt=1,
    head_sha="a" * 40,
    status="completed",
    conclusion="failure",
    at=T0,
)
MAIN = replace(PR_FAIL, row_key="main", run_id="5", head_sha="m" * 40, at=T0 - timedelta(hours=1))


def names(*tests: str) -> frozenset[str]:
    return frozenset(tests)


@pytest.mark.parametrize(
    ("pr_tests", "main_conclusion", "main_tests", "expected"),
    [
        (None, "success", None, NEW),
        (None, "failure", None, ALREADY_FAILING),
        (None, "timed_out", None, ALREADY_FAILING),
        (names("t1"), "failure", names("t1", "t2"), ALREADY_FAILING),
        (names("t1", "t3"), "failure", names("t1", "t2"), NEW),
        (names("t1"), "failure", None, ALREADY_FAILING),
        (None, "failure", names("t1"), ALREADY_FAILING),
        (names("t1"), "success", None, NEW),
    ],
)
def test_a_failed_pr_job_against_the_baseline_push_result(
    pr_tests: frozenset[str] | None,
    main_conclusion: str,
    main_tests: frozenset[str] | None,
    expected: Verdict,
) -> None:
    failed = replace(PR_FAIL, failed_tests=pr_tests)
    baseline = replace(MAIN, conclusion=main_conclusion, failed_tests=main_tests)

    assert against_baseline(failed, baseline) == expected


def test_without_a_baseline_the_verdict_is_unknown() -> None:
    assert classify(PR_FAIL, [PR_FAIL], None) == UNKNOWN


def test_a_later_attempt_that_passed_makes_the_failure_flaky_whatever_main_says() -> None:
    retry = replace(PR_FAIL, row_key="pr-2", run_attempt=2, conclusion="success")

    assert classify(PR_FAIL, [PR_FAIL, retry], replace(MAIN, conclusion="success")) == FLAKY


@pytest.mark.parametrize(
    "other",
    [
        replace(PR_FAIL, row_key="x", run_attempt=2, conclusion="failure"),
        replace(PR_FAIL, row_key="x", run_attempt=2, status="in_progress", conclusion=None),
        replace(PR_FAIL, row_key="x", run_attempt=2, conclusion="success", run_id="78"),
        replace(PR_FAIL, row_key="x", run_attempt=2, conclusion="success", head_sha="b" * 40),
        replace(PR_FAIL, row_key="x", run_attempt=2, conclusion="success", job="lint"),
        replace(PR_FAIL, row_key="x", run_attempt=1, conclusion="success", run_id="77"),
    ],
    ids=["failed-again", "still-running", "other-run", "other-sha", "other-job", "not-later"],
)
def test_only_a_later_passing_attempt_of_the_same_run_and_commit_counts_as_a_retry(
    other: Run,
) -> None:
    assert not passed_on_retry(PR_FAIL, [PR_FAIL, other])

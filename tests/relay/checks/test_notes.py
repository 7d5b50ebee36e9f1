"""What a check run says beyond the job's report (SPEC §11), as values."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from tests.relay.checks.test_check_runs import REPORT, job_data

from crcr.relay.checks.check_runs import CheckReport, check_run_fields, report_from_job
from crcr.relay.checks.notes import CheckNotes, FlakeCheck, hud_pr_url, noted_conclusion
from crcr.relay.jobs.job import Job
from crcr.relay.jobs.lifecycle import JobState
from crcr.stores.state import JobRecord


def finished(conclusion: str, **changes: Any) -> CheckReport:
    return replace(REPORT, state=JobState.COMPLETED, conclusion=conclusion, **changes)


def summary(fields: dict[str, Any]) -> str:
    text: str = fields["output"]["summary"]
    return text


@pytest.mark.parametrize(
    ("reported", "notes", "expected"),
    [
        ("failure", CheckNotes(), "failure"),
        ("failure", CheckNotes(flake=FlakeCheck.RERUNNING), None),
        ("failure", CheckNotes(flake=FlakeCheck.FAILED_TWICE), "failure"),
        ("success", CheckNotes(flake=FlakeCheck.FLAKY), "success"),
        ("success", CheckNotes(github_conclusion="failure"), "failure"),
        ("success", CheckNotes(github_conclusion="cancelled"), "failure"),
        ("success", CheckNotes(github_conclusion="success"), "success"),
        ("failure", CheckNotes(github_conclusion="success"), "failure"),
        (None, CheckNotes(flake=FlakeCheck.RERUNNING), None),
        ("failure", CheckNotes(flake=FlakeCheck.UNCONFIRMED), "failure"),
    ],
)
def test_the_notes_decide_the_conclusion(
    reported: str | None, notes: CheckNotes, expected: str | None
) -> None:
    assert noted_conclusion(reported, notes) == expected


def test_the_first_failed_tests_are_named_and_the_rest_counted() -> None:
    names = tuple(f"test_{n}" for n in range(8))
    fields = check_run_fields(finished("failure", failed_tests=names, failed_total=130))
    assert (
        "Failed tests: `test_0`, `test_1`, `test_2`, `test_3`, `test_4` and 125 more."
        in summary(fields)
    )


def test_a_test_name_cannot_break_out_of_its_code_span() -> None:
    fields = check_run_fields(finished("failure", failed_tests=("a`b\n[x](y)",), failed_total=1))
    assert "`a'b [x](y)`" in summary(fields)


def test_the_baseline_and_the_hud_link_are_shown() -> None:
    notes = CheckNotes(hud_pr_url="https://hud.example.org/crcr/pr/77", baseline="already_failing")
    text = summary(check_run_fields(finished("failure"), notes))
    assert "Baseline: already failing on the upstream's default branch." in text
    assert "[This pull request on the HUD](https://hud.example.org/crcr/pr/77)" in text


def test_an_unknown_baseline_word_is_not_shown() -> None:
    text = summary(check_run_fields(finished("failure"), CheckNotes(baseline="<script>")))
    assert "Baseline" not in text


def test_a_re_run_in_flight_keeps_the_check_in_progress() -> None:
    fields = check_run_fields(finished("failure"), CheckNotes(flake=FlakeCheck.RERUNNING))
    assert fields["status"] == "in_progress" and "conclusion" not in fields
    assert fields["output"]["title"] == "Re-running to confirm"


def test_a_contradicted_success_is_a_failure_that_says_why() -> None:
    fields = check_run_fields(finished("success"), CheckNotes(github_conclusion="failure"))
    assert (fields["status"], fields["conclusion"]) == ("completed", "failure")
    assert fields["output"]["title"] == "Failure"
    assert "GitHub records the job's conclusion as `failure`" in summary(fields)


def test_the_hud_link_needs_the_setting_and_a_pull_request() -> None:
    assert hud_pr_url("https://hud.example.org", 77) == "https://hud.example.org/crcr/pr/77"
    assert hud_pr_url(None, 77) is None
    assert hud_pr_url("https://hud.example.org", None) is None


def test_a_report_carries_the_failed_test_names_the_relay_kept() -> None:
    data = job_data(conclusion="failure", issuer_kind="github")
    data["callback"]["workflow"]["test_results"] = {
        "failed": 120,
        "failed_tests": [{"name": "test_a"}, {"name": "test_b"}, {"file": "nameless.py"}],
        "failed_tests_dropped": 20,
    }
    report = report_from_job(Job.from_store("k", JobRecord(state="COMPLETED", data=data)))
    assert report.failed_tests == ("test_a", "test_b")
    assert report.failed_total == 22
    assert report.issuer_kind == "github"

"""Check runs as values (SPEC §7): names, external ids, outputs, conclusions, who wants one."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from crcr.relay.allowlist.model import Level
from crcr.relay.checks.check_runs import (
    CheckReport,
    DownstreamRun,
    check_conclusion,
    check_run_fields,
    check_run_name,
    downstream_run_of,
    external_id,
    report_from_job,
    wants_check_run,
)
from crcr.relay.jobs.dispatch import DispatchRecord, DispatchStatus, UpstreamContext
from crcr.relay.jobs.job import Job, JobRecordUnreadable
from crcr.relay.jobs.lifecycle import JobState
from crcr.stores.state import JobRecord

SHA = "ab" * 20
URL = "https://github.com/org/critical/actions/runs/9001"
REPORT = CheckReport(
    job_key="k",
    repo="org/critical",
    level=Level.L4,
    state=JobState.IN_PROGRESS,
    conclusion=None,
    workflow_name="ci",
    job_name="test",
    run_id="9001",
    run_attempt="1",
    run_url=URL,
    head_sha=SHA,
    pr_number=77,
    labels=(),
)


def finished(conclusion: str, state: JobState = JobState.COMPLETED) -> CheckReport:
    return replace(REPORT, state=state, conclusion=conclusion)


# --- names and ids ----------------------------------------------------------------------


def test_the_name_is_crcr_repo_workflow_job() -> None:
    assert check_run_name("org/critical", "ci", "test") == "crcr/org/critical/ci/test"
    assert check_run_name("org/critical", "ci", "") == "crcr/org/critical/ci"


def test_the_external_id_is_run_and_pr_with_zero_for_pushes() -> None:
    assert external_id("9001", 77) == "9001:77"
    assert external_id("9001", None) == "9001:0"


@pytest.mark.parametrize(
    ("name", "external", "expected"),
    [
        ("crcr/org/critical/ci/test", "9001:77", DownstreamRun("org/critical", 9001)),
        ("crcr/org/critical/release/build/x86", "12:0", DownstreamRun("org/critical", 12)),
        ("crcr/org/critical/ci/test", "", None),
        ("crcr/org/critical/ci/test", "0190-uuid:77", None),  # Buildkite: no API re-run
        ("crcr/org/critical", "9001:77", None),
        ("lint / flake8", "9001:77", None),
        ("crcr//critical/ci/test", "9001:77", None),
    ],
)
def test_a_check_run_leads_back_to_its_downstream_run_only_if_crcr_named_it(
    name: str, external: str, expected: DownstreamRun | None
) -> None:
    assert downstream_run_of(name, external) == expected


# --- conclusions ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reported", "expected"),
    [
        ("success", "success"),
        ("FAILURE", "failure"),
        ("cancelled", "cancelled"),
        ("skipped", "skipped"),
        ("neutral", "neutral"),
        ("timed_out", "timed_out"),
        ("passed", "success"),
        ("failed", "failure"),
        ("canceled", "cancelled"),
        ("startup_failure", "failure"),
        ("not_run", "skipped"),
        ("something-new", "failure"),
        (None, "failure"),
    ],
)
def test_conclusions_map_to_githubs_set_and_unknown_ones_fail_closed(
    reported: str | None, expected: str
) -> None:
    assert check_conclusion(reported) == expected


# --- the body sent to GitHub ----------------------------------------------------------------


def test_an_in_progress_check_run_has_no_conclusion() -> None:
    fields = check_run_fields(REPORT)

    assert fields["name"] == "crcr/org/critical/ci/test"
    assert fields["head_sha"] == SHA
    assert fields["status"] == "in_progress"
    assert "conclusion" not in fields
    assert fields["external_id"] == "9001:77"
    assert fields["details_url"] == URL
    assert fields["output"]["title"] == "In progress"
    assert "`org/critical`" in fields["output"]["summary"]
    assert URL in fields["output"]["summary"]


def test_a_completed_check_run_carries_the_capitalised_conclusion() -> None:
    fields = check_run_fields(finished("failure"))

    assert (fields["status"], fields["conclusion"]) == ("completed", "failure")
    assert fields["output"]["title"] == "Failure"
    assert "**failure**" in fields["output"]["summary"]


def test_a_timeout_reads_as_such() -> None:
    fields = check_run_fields(finished("timed_out", JobState.TIMED_OUT))

    assert fields["conclusion"] == "timed_out"
    assert fields["output"]["title"] == "Timed out"
    assert "timed it out" in fields["output"]["summary"]


def test_a_translated_conclusion_shows_what_was_reported() -> None:
    fields = check_run_fields(finished("passed"))

    assert fields["conclusion"] == "success"
    assert "`passed`" in fields["output"]["summary"]


def test_a_run_url_that_is_not_a_web_url_is_left_out() -> None:
    fields = check_run_fields(replace(REPORT, run_url="javascript:alert(1)"))

    assert "details_url" not in fields
    assert "javascript:" not in fields["output"]["summary"]


def test_names_cannot_break_out_of_inline_code() -> None:
    summary = check_run_fields(replace(REPORT, job_name="x` [click](https://evil)"))["output"]

    assert "`ci / x' [click](https://evil)`" in summary["summary"]


# --- who gets one -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("level", "labels", "flagged", "expected"),
    [
        (Level.L4, (), False, True),
        (Level.L3, ("ciflow/crcr/xpu",), False, True),
        (Level.L3, ("CIFlow/CRCR/XPU",), False, True),
        (Level.L3, ("ciflow/crcr/npu",), False, False),
        (Level.L3, (), True, True),
        (Level.L3, (), False, False),
        (Level.L2, ("ciflow/crcr/xpu",), True, False),
    ],
)
def test_l4_always_l3_by_label_or_flag_below_never(
    level: Level, labels: tuple[str, ...], flagged: bool, expected: bool
) -> None:
    assert wants_check_run(level, "xpu", labels, flagged=flagged) is expected


# --- rebuilding from the job record --------------------------------------------------------


def job_data(**overrides: Any) -> dict[str, Any]:
    record = DispatchRecord(
        delivery_id="d-1",
        repo="org/critical",
        status=DispatchStatus.DISPATCHED,
        context=UpstreamContext("pytorch/pytorch", "pull_request", SHA, 77, ("ciflow/crcr/xpu",)),
        sent_at=0.0,
    )
    workflow = {"name": "ci", "job_name": "test", "run_id": "9001", "run_attempt": "2"}
    data = {
        "verified_repo": "org/critical",
        "level": "L4",
        "record": record.to_store(),
        "callback": {"delivery_id": "d-1", "workflow": {**workflow, "url": URL}},
    }
    return {**data, **overrides}


def test_a_report_is_rebuilt_from_the_record_not_the_echoed_payload() -> None:
    job = Job.from_store("k", JobRecord(state="COMPLETED", data=job_data(conclusion="failure")))

    report = report_from_job(job)

    assert (report.head_sha, report.pr_number, report.labels) == (SHA, 77, ("ciflow/crcr/xpu",))
    assert (report.state, report.check_conclusion, report.failing) == (
        JobState.COMPLETED,
        "failure",
        True,
    )
    assert report.run_attempt == "2"
    assert report.to_summary()["name"] == "crcr/org/critical/ci/test"


@pytest.mark.parametrize("data", [{"conclusion": "x"}, job_data(level="L9")])
def test_a_record_without_the_in_progress_facts_is_no_job(data: dict[str, Any]) -> None:
    with pytest.raises(JobRecordUnreadable):
        Job.from_store("k", JobRecord(state="COMPLETED", data=data))

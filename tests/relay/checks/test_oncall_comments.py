"""The oncall comment as a value (SPEC §7): which jobs it lists, how it reads, how it is found.

The scenario (a failure → one comment, a second failure → the same comment updated)
is in test_check_publisher.py, over the real app.
"""

from __future__ import annotations

from typing import Any

from crcr.relay.checks.oncall_comments import (
    FailingJob,
    failing_jobs,
    find_comment,
    oncall_marker,
    render_comment,
)

URL = "https://github.com/org/critical/actions/runs/9001"


def summary(name: str, conclusion: str | None, attempt: str = "1") -> dict[str, Any]:
    return {
        "name": name,
        "state": "COMPLETED" if conclusion else "IN_PROGRESS",
        "conclusion": conclusion,
        "run_id": "9001",
        "run_attempt": attempt,
        "run_url": URL,
    }


def test_failing_jobs_are_failures_and_timeouts_sorted_by_name() -> None:
    summaries = {
        "k1": summary("crcr/org/critical/ci/test", "failure"),
        "k2": summary("crcr/org/critical/ci/build", "timed_out"),
        "k3": summary("crcr/org/critical/ci/lint", "success"),
        "k4": summary("crcr/org/critical/ci/docs", "cancelled"),
        "k5": summary("crcr/org/critical/ci/slow", None),
    }

    assert failing_jobs(summaries) == [
        FailingJob("crcr/org/critical/ci/build", "timed_out", "9001", URL),
        FailingJob("crcr/org/critical/ci/test", "failure", "9001", URL),
    ]


def test_a_job_that_passed_on_a_rerun_no_longer_fails() -> None:
    summaries = {
        "attempt-2": summary("crcr/org/critical/ci/test", "success", attempt="2"),
        "attempt-1": summary("crcr/org/critical/ci/test", "failure", attempt="1"),
    }

    assert failing_jobs(summaries) == []


def test_one_row_per_job_the_latest_run_of_its_name() -> None:
    """A job dispatched again on the same commit (a new run) replaces its row."""
    older = summary("crcr/org/critical/ci/test", "failure") | {"run_id": "9001", "started_at": 1.0}
    newer = summary("crcr/org/critical/ci/test", "timed_out") | {
        "run_id": "9002",
        "started_at": 2.0,
    }
    passed = summary("crcr/org/critical/ci/lint", "success") | {"run_id": "9003", "started_at": 3.0}
    failed_first = summary("crcr/org/critical/ci/lint", "failure") | {"started_at": 0.5}

    rows = failing_jobs({"a": newer, "b": older, "c": passed, "d": failed_first})

    assert rows == [FailingJob("crcr/org/critical/ci/test", "timed_out", "9002", URL)]


def test_summaries_without_a_start_time_compare_by_attempt_then_run() -> None:
    first = summary("crcr/org/critical/ci/test", "success") | {"run_id": "9001"}
    later_run = summary("crcr/org/critical/ci/test", "failure") | {"run_id": "9002"}

    assert [row.run_id for row in failing_jobs({"a": later_run, "b": first})] == ["9002"]


def test_the_comment_starts_with_the_marker_mentions_oncalls_and_lists_jobs() -> None:
    jobs = [FailingJob("crcr/org/critical/ci/te|st", "failure", "9001", URL)]

    body = render_comment("org/critical", ("oncall1", "oncall2"), "ab" * 20, jobs)

    assert body.splitlines()[0] == "<!-- crcr-oncall:org/critical -->"
    assert "@oncall1 @oncall2" in body
    assert "ababababab" in body
    assert f"| `crcr/org/critical/ci/te\\|st` | failure | [run 9001]({URL}) |" in body


def test_only_our_apps_comment_with_the_marker_is_ours() -> None:
    marker = oncall_marker("org/critical")
    ours = "crcr-app[bot]"
    comments = [
        {"id": 1, "body": f"{marker} pasted by a person", "user": {"login": ours, "type": "User"}},
        {"id": 2, "body": oncall_marker("org/other"), "user": {"login": ours, "type": "Bot"}},
        {"id": 3, "body": f"quoting\n{marker}", "user": {"login": ours, "type": "Bot"}},
        {"id": 4, "body": marker, "user": {"login": "github-actions[bot]", "type": "Bot"}},
        {"id": 5, "body": f"{marker}\n### crcr", "user": {"login": "CRCR-App[bot]", "type": "Bot"}},
    ]

    found = find_comment(comments, "org/critical", ours)

    assert found is not None and found["id"] == 5
    assert find_comment(comments[:4], "org/critical", ours) is None

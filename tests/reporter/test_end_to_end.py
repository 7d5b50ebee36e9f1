"""`crcr report` end to end, the way a CI job runs it, against a running relay (`live_stack`).

A signed webhook makes the relay dispatch; the job's environment is built from that
dispatch; `crcr report` runs as its own process and the HUD's JSON API shows what landed.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from tests.reporter.live_stack import (
    ACTIONS_REPO,
    BUILDKITE_PIPELINE,
    BUILDKITE_REPO,
    UPSTREAM,
    Stack,
    actions_job,
    buildkite_job,
    running_stack,
)

REPORT = [sys.executable, "-m", "crcr", "report"]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """One relay and sandbox for the module."""
    with running_stack(tmp_path_factory.mktemp("report-e2e")) as running:
        yield running


def report(env: Mapping[str, str], *options: str) -> subprocess.CompletedProcess[str]:
    """Run `crcr report` as the job's step would."""
    return subprocess.run(
        [*REPORT, *options],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


COMPLETED_SUCCESS = (
    "--status",
    "completed",
    "--conclusion",
    "success",
    "--test-results",
    '{"passed":3,"failed":0,"skipped":1}',
    "--artifact-url",
    "https://artifacts.example.org/run/1",
)


def test_an_actions_job_reports_a_dispatched_pr_to_the_hud(stack: Stack, tmp_path: Path) -> None:
    head_sha = "a1" * 20
    delivery_id = stack.open_pr(101, head_sha)
    client_payload = stack.client_payload(ACTIONS_REPO, delivery_id)
    event = {
        "action": "pull_request",
        "branch": "main",
        "client_payload": client_payload,
        "repository": {"full_name": ACTIONS_REPO},
    }
    env = actions_job(stack, tmp_path, event_name="repository_dispatch", event=event, run_id="5001")

    started = report(env, "--status", "in_progress")
    completed = report(env, *COMPLETED_SUCCESS)

    assert (started.returncode, completed.returncode) == (0, 0), started.stderr + completed.stderr
    assert "relay accepted the report" in completed.stdout
    [row] = stack.job_rows(101, ACTIONS_REPO)
    assert (row["status"], row["conclusion"]) == ("completed", "success")
    assert (row["passed"], row["failed"], row["skipped"], row["total_tests"]) == (3, 0, 1, 4)
    assert row["queue_time"] is not None and row["queue_time"] >= 0
    assert row["execution_time"] is not None and row["execution_time"] >= 0
    assert row["started_at"] is not None and row["completed_at"] is not None
    assert row["head_sha"] == client_payload["payload"]["pull_request"]["head"]["sha"] == head_sha
    assert (row["event_type"], row["delivery_id"]) == ("pull_request", delivery_id)
    assert (row["workflow_name"], row["job_name"], row["run_id"]) == (
        "actions-backend CI",
        "test",
        "5001",
    )
    assert row["artifact_url"] == "https://artifacts.example.org/run/1"

    # A retried step (its first response lost) is fine; changing the verdict is not.
    repeated = report(env, *COMPLETED_SUCCESS)
    conflicting = report(env, "--status", "completed", "--conclusion", "failure")

    assert repeated.returncode == 0, repeated.stderr
    assert "already had this report" in repeated.stdout
    assert conflicting.returncode == 1
    assert "HTTP 409" in conflicting.stderr
    assert "job already completed as 'success'" in conflicting.stderr
    [unchanged] = stack.job_rows(101, ACTIONS_REPO)
    assert unchanged["conclusion"] == "success"
    stack.assert_no_secret_in([started, completed, repeated, conflicting])


def test_a_buildkite_job_reports_through_the_agents_token(stack: Stack, tmp_path: Path) -> None:
    head_sha = "b2" * 20
    delivery_id = stack.open_pr(202, head_sha)
    client_payload = stack.client_payload(BUILDKITE_REPO, delivery_id)
    env = buildkite_job(stack, tmp_path, client_payload, build_branch="main")

    started = report(env, "--status", "in_progress")
    completed = report(env, *COMPLETED_SUCCESS)

    assert (started.returncode, completed.returncode) == (0, 0), started.stderr + completed.stderr
    [row] = stack.job_rows(202, BUILDKITE_REPO)
    assert (row["status"], row["conclusion"], row["head_sha"]) == ("completed", "success", head_sha)
    assert (row["workflow_name"], row["job_name"]) == (BUILDKITE_PIPELINE, ":pytorch: test npu")
    assert row["run_id"] == env["BUILDKITE_BUILD_ID"]
    assert row["check_run_id"] == env["BUILDKITE_JOB_ID"]
    assert row["queue_time"] is not None and row["execution_time"] is not None
    stack.assert_no_secret_in([started, completed])


def test_a_buildkite_token_from_another_branch_is_refused(stack: Stack, tmp_path: Path) -> None:
    delivery_id = stack.open_pr(203, "c3" * 20)
    client_payload = stack.client_payload(BUILDKITE_REPO, delivery_id)
    env = buildkite_job(stack, tmp_path, client_payload, build_branch="feature/untrusted")

    refused = report(env, "--status", "in_progress")

    assert refused.returncode == 1
    assert "HTTP 401" in refused.stderr
    assert "build_branch does not meet the pipeline's requirement" in refused.stderr
    assert stack.job_rows(203, BUILDKITE_REPO) == []
    stack.assert_no_secret_in([refused])


def test_a_buildkite_agent_too_old_to_ask_for_the_id_claims_is_refused(
    stack: Stack, tmp_path: Path
) -> None:
    # Its token would carry only the slugs, which anyone can choose: not enough to map.
    delivery_id = stack.open_pr(204, "d4" * 20)
    client_payload = stack.client_payload(BUILDKITE_REPO, delivery_id)
    env = buildkite_job(stack, tmp_path, client_payload, build_branch="main", old_agent=True)

    refused = report(env, "--status", "in_progress")

    assert refused.returncode == 1
    assert "buildkite-agent is too old" in refused.stderr
    assert "upgrade it" in refused.stderr
    assert stack.job_rows(204, BUILDKITE_REPO) == []
    stack.assert_no_secret_in([refused])


def test_a_nightly_self_report_is_shown_as_nightly(stack: Stack, tmp_path: Path) -> None:
    tested_sha = stack.github.add_commit(UPSTREAM, message="Nightly candidate")
    env = actions_job(
        stack, tmp_path, event_name="schedule", event={"schedule": "17 3 * * *"}, run_id="7001"
    )

    nightly = report(
        env,
        "--event-type",
        "nightly",
        "--delivery-id",
        tested_sha,
        "--status",
        "completed",
        "--conclusion",
        "success",
    )

    assert nightly.returncode == 0, nightly.stderr
    assert "relay accepted the report" in nightly.stdout
    [periodic] = [row for row in stack.hud("/periodic?days=1") if row["repo"] == ACTIONS_REPO]
    assert (periodic["latest_sha"], periodic["latest_conclusion"]) == (tested_sha, "success")
    assert (periodic["total"], periodic["successes"]) == (1, 1)
    stack.assert_no_secret_in([nightly])

"""`crcr report --failed-tests FILE --triage-verdict FILE` (SPEC §11): advisory, never fatal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.reporter.test_cli import Env, cli_env, crcr, server, stub

from crcr.failure_detail.failed_tests import DROPPED_KEY

__all__ = ["cli_env", "server", "stub"]  # fixtures used by name

JUNIT = Path(__file__).parents[1] / "fixtures" / "reporter" / "junit"
VERDICT = {
    "schema_version": 1,
    "category": "backend",
    "confidence": "high",
    "summary": "the xpu conv kernel regressed in our last driver bump",
}


def dry_run(env: Env, *options: str) -> tuple[dict[str, Any], str]:
    result = crcr(["--status", "completed", "--conclusion", "failure", "--dry-run", *options], env)
    assert result.exit_code == 0, result.stderr
    workflow: dict[str, Any] = json.loads(result.stdout)["workflow"]
    return workflow, result.stderr


def test_a_junit_report_gives_the_counts_and_the_failed_tests(cli_env: Env) -> None:
    workflow, warnings = dry_run(cli_env, "--failed-tests", str(JUNIT / "gtest.xml"))
    results = workflow["test_results"]
    assert (results["passed"], results["failed"], results["skipped"]) == (2, 1, 1)
    assert [t["name"] for t in results["failed_tests"]] == ["TensorTest.MatmulOnDevice"]
    assert warnings == ""


def test_counts_given_on_the_command_line_win(cli_env: Env) -> None:
    workflow, _ = dry_run(
        cli_env,
        "--test-results",
        '{"passed": 900, "failed": 2, "skipped": 40}',
        "--failed-tests",
        str(JUNIT / "pytest_xunit1.xml"),
    )
    results = workflow["test_results"]
    assert (results["passed"], results["failed"], results["skipped"]) == (900, 2, 40)
    assert len(results["failed_tests"]) == 2


def test_a_json_list_is_bounded_before_it_is_sent(cli_env: Env, tmp_path: Path) -> None:
    listing = tmp_path / "failed.json"
    listing.write_text(
        json.dumps([{"name": f"test_{n}", "message": "m" * 5000} for n in range(120)])
    )

    workflow, _ = dry_run(cli_env, "--failed-tests", str(listing))

    results = workflow["test_results"]
    assert len(results["failed_tests"]) == 100
    assert len(results["failed_tests"][0]["message"]) == 2000
    assert results[DROPPED_KEY] == 20
    assert results["failed"] == 120


def test_a_missing_report_is_a_warning_and_the_result_still_goes(
    cli_env: Env, tmp_path: Path
) -> None:
    workflow, warnings = dry_run(cli_env, "--failed-tests", str(tmp_path / "never-written.xml"))
    assert "test_results" not in workflow
    assert "warning: failed tests not sent: --failed-tests" in warnings
    assert "never-written.xml: cannot be read" in warnings


def test_a_hostile_report_is_a_warning(cli_env: Env, tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    report.write_text('<!DOCTYPE t [<!ENTITY x SYSTEM "file:///etc/passwd">]><testsuite/>')
    workflow, warnings = dry_run(cli_env, "--failed-tests", str(report))
    assert "test_results" not in workflow
    assert "DTDs and entity declarations are not accepted" in warnings


def report_with_verdict(env: Env, path: Path, text: str) -> tuple[dict[str, Any], str]:
    """A dry-run report whose `--triage-verdict` file holds `text`."""
    path.write_text(text)
    return dry_run(env, "--triage-verdict", str(path))


def test_a_triage_verdict_is_sent_sanitised(cli_env: Env, tmp_path: Path) -> None:
    sent = json.dumps({**VERDICT, "schema_version": "1", "colour": "red"})
    workflow, warnings = report_with_verdict(cli_env, tmp_path / "verdict.json", sent)
    assert workflow["triage_verdict"] == VERDICT
    assert warnings == ""


@pytest.mark.parametrize(
    ("text", "warning"),
    [
        (
            json.dumps({**VERDICT, "category": "gremlins"}),
            "triage verdict not sent: triage_verdict dropped: category: must be one of",
        ),
        ("category: upstream", "triage verdict not sent: --triage-verdict"),
    ],
    ids=["breaks-the-schema", "not-json"],
)
def test_a_bad_verdict_is_a_warning_naming_the_problem(
    cli_env: Env, tmp_path: Path, text: str, warning: str
) -> None:
    workflow, warnings = report_with_verdict(cli_env, tmp_path / "verdict.json", text)
    assert "triage_verdict" not in workflow
    assert warning in warnings

"""`python3 -m crcr.reporter`: the action's outputs and annotations, `crcr report`'s exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest

from crcr.reporter.command import ReportResult
from crcr.reporter.standalone import annotation, finish, main

REFUSED = ReportResult(1, "refused", 400, "relay refused the report with HTTP 400: x", True)
DOWN = ReportResult(1, "failed", None, "gave up after 5 attempts: ConnectError")


def test_an_annotation_keeps_a_multi_line_message_on_one_command() -> None:
    assert annotation("error", "50% done\r\nthen\nfailed") == (
        "::error title=crcr report::50%25 done%0D%0Athen%0Afailed"
    )


@pytest.mark.parametrize(
    ("result", "level"), [(REFUSED, "error"), (DOWN, "warning")], ids=["4xx", "relay down"]
)
def test_in_the_action_a_failure_is_an_annotation_and_the_step_succeeds(
    result: ReportResult, level: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = tmp_path / "output"
    env = {"GITHUB_OUTPUT": str(outputs)}

    code = finish(result, env, action=True, fail=False)

    assert code == 0
    assert capsys.readouterr().out.startswith(f"::{level} title=crcr report::{result.message}")
    status = "" if result.http_status is None else str(result.http_status)
    assert outputs.read_text() == f"outcome={result.outcome}\nhttp-status={status}\n"


def test_with_fail_on_error_the_step_fails_with_the_cli_exit_code(tmp_path: Path) -> None:
    env = {"GITHUB_OUTPUT": str(tmp_path / "output")}
    assert finish(REFUSED, env, action=True, fail=True) == 1
    assert finish(ReportResult(2, "invalid", message="bad"), env, action=True, fail=True) == 2


def test_outside_the_action_it_behaves_as_crcr_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {"GITHUB_OUTPUT": str(tmp_path / "output")}

    assert finish(DOWN, env, action=False, fail=False) == 1

    assert capsys.readouterr().err == f"crcr report: {DOWN.message}\n"
    assert not (tmp_path / "output").exists()


def test_a_wrong_option_exits_2_and_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--status", "in_progress", "--fail-on-error", "maybe"], environ={}) == 2
    assert "expected true or false" in capsys.readouterr().err
    assert main(["--help"], environ={}) == 0
    assert "--fail-on-error" in capsys.readouterr().out

"""The composite action takes the reference's inputs and hands them to `crcr report` safely."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ACTION = Path(__file__).parents[2] / "action" / "crcr-report" / "action.yml"
# The inputs of pytorch/test-infra's cross-repo-ci-relay-callback that SPEC §5 carries.
REFERENCE_INPUTS = {
    "status",
    "conclusion",
    "test-results",
    "artifact-url",
    "job-name",
    "callback-url",
    "delivery-id",
    "event-type",
    "max-time",
}
FAILURE_DETAIL_INPUTS = {"failed-tests", "triage-verdict"}
OWN_INPUTS = {"attempts", "fail-on-error", "python"}


@pytest.fixture(scope="module")
def action() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(ACTION.read_text())
    return loaded


def step(action: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [s for s in action["runs"]["steps"] if s["name"] == name]
    return found


def test_the_action_is_composite_with_the_reference_inputs(action: dict[str, Any]) -> None:
    assert action["runs"]["using"] == "composite"
    assert set(action["inputs"]) >= REFERENCE_INPUTS | FAILURE_DETAIL_INPUTS
    assert all(action["inputs"][name]["default"] == "" for name in FAILURE_DETAIL_INPUTS)
    assert action["inputs"]["status"]["required"] is True
    assert action["inputs"]["job-name"]["default"] == "${{ github.job }}"
    assert "id-token: write" in action["description"]


def test_no_expression_is_spliced_into_a_script(action: dict[str, Any]) -> None:
    for each in action["runs"]["steps"]:
        assert "${{" not in each["run"], each["name"]


def test_every_input_reaches_the_report_step_through_its_environment(
    action: dict[str, Any],
) -> None:
    env = step(action, "Report to the relay")["env"]
    passed = " ".join(env.values())
    for name in REFERENCE_INPUTS | FAILURE_DETAIL_INPUTS | OWN_INPUTS:
        assert f"inputs.{name} }}}}" in passed, name
    assert env["CRCR_CHECK_RUN_ID"] == "${{ job.check_run_id }}"


@pytest.mark.skipif(shutil.which("bash") is None, reason="the action's steps run in bash")
def test_hostile_inputs_arrive_as_literal_arguments(action: dict[str, Any], tmp_path: Path) -> None:
    # A stand-in python3 that passes the version check and prints the reporter's arguments.
    fake_python = tmp_path / "python3"
    fake_python.write_text(
        '#!/bin/sh\ncase "$2" in *version_info*) exit 0;; esac\n'
        'shift 4\nfor arg in "$@"; do printf "%s\\n" "$arg"; done\n'
    )
    fake_python.chmod(fake_python.stat().st_mode | stat.S_IXUSR)
    marker = tmp_path / "pwned"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "RUNNER_TEMP": str(tmp_path),
        "GITHUB_OUTPUT": str(tmp_path / "output"),
        "CRCR_ACTION_SRC": str(tmp_path / "src"),
        "CRCR_ACTION_PYTHON": str(fake_python),
        "CRCR_INPUT_STATUS": "completed",
        "CRCR_INPUT_CONCLUSION": "success",
        "CRCR_INPUT_TEST_RESULTS": '{"passed": 1, "failed": 0, "skipped": 0}',
        "CRCR_INPUT_ARTIFACT_URL": "",
        "CRCR_INPUT_FAILED_TESTS": "reports/junit $(touch pwned).xml",
        "CRCR_INPUT_TRIAGE_VERDICT": "",
        "CRCR_INPUT_JOB_NAME": f"--help $(touch {marker}); `touch {marker}`",
        "CRCR_INPUT_DELIVERY_ID": "",
        "CRCR_INPUT_EVENT_TYPE": "",
        "CRCR_INPUT_MAX_TIME": "10",
        "CRCR_INPUT_ATTEMPTS": "5",
        "CRCR_INPUT_FAIL_ON_ERROR": "false",
    }
    script = step(action, "Report to the relay")["run"]
    result = subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert result.stdout.splitlines() == [
        "--action",
        "--provider=github",
        "--status=completed",
        "--timeout=10",
        "--attempts=5",
        "--fail-on-error=false",
        "--conclusion=success",
        '--test-results={"passed": 1, "failed": 0, "skipped": 0}',
        "--failed-tests=reports/junit $(touch pwned).xml",
        f"--job-name=--help $(touch {marker}); `touch {marker}`",
    ]
    assert not marker.exists()


def test_the_action_installs_nothing(action: dict[str, Any]) -> None:
    words = set(re.findall(r"[\w-]+", " ".join(each["run"] for each in action["runs"]["steps"])))
    assert not words & {"pip", "pip3", "venv", "virtualenv", "uv", "pipx", "install"}
    assert set(action["outputs"]) == {"http-status", "outcome"}
    assert action["inputs"]["fail-on-error"]["default"] == "false"

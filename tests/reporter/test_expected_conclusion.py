"""`crcr report --expected-conclusion` (SPEC §13): a canary probe job says how it should end.

The flag lands in the callback body as `workflow.expected_conclusion`, which the relay's
callback schema accepts and the health verdict reads; a value no check run can conclude
with is refused before anything is minted, naming the option.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from tests.reporter.test_action import ACTION
from tests.reporter.test_cli import Env, RelayAndRuntime, cli_env, crcr, server, stub

from crcr.relay.callback.schema import Workflow
from crcr.reporter import standalone

__all__ = ["cli_env", "server", "stub"]  # fixtures used by name


def dry_run(env: Env, *options: str) -> dict[str, Any]:
    result = crcr(["--status", "completed", "--conclusion", "failure", "--dry-run", *options], env)
    assert result.exit_code == 0, result.stderr
    body: dict[str, Any] = json.loads(result.stdout)
    return body


def test_the_expected_conclusion_reaches_the_body_and_the_relay_schema_accepts_it(
    cli_env: Env,
) -> None:
    body = dry_run(cli_env, "--expected-conclusion", "Failure")
    assert body["workflow"]["expected_conclusion"] == "failure"
    assert Workflow.model_validate(body["workflow"]).expected_conclusion == "failure"


def test_without_the_flag_the_body_has_no_expectation(cli_env: Env) -> None:
    assert "expected_conclusion" not in dry_run(cli_env)["workflow"]
    assert "expected_conclusion" not in dry_run(cli_env, "--expected-conclusion", " ")["workflow"]


@pytest.mark.parametrize("value", ["broken", "stale", "succes"])
def test_a_value_no_check_run_concludes_with_is_refused_naming_the_option(
    cli_env: Env, stub: RelayAndRuntime, value: str
) -> None:
    result = crcr(
        ["--status", "completed", "--conclusion", "success", "--expected-conclusion", value],
        cli_env,
    )
    assert result.exit_code == 2
    assert "--expected-conclusion must be one of success, failure" in result.stderr
    assert repr(value) in result.stderr
    assert stub.received == [] and stub.audiences == []


def test_the_standard_library_reporter_takes_the_flag_too(
    cli_env: Env, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {key: value for key, value in cli_env.items() if value is not None}
    argv = ["--status", "completed", "--conclusion", "cancelled", "--dry-run"]
    code = standalone.main([*argv, "--expected-conclusion", "cancelled"], env)
    assert code == 0
    body = json.loads(capsys.readouterr().out)
    assert body["workflow"]["expected_conclusion"] == "cancelled"


def test_the_composite_action_passes_its_input_through_its_environment() -> None:
    action = yaml.safe_load(ACTION.read_text())
    assert action["inputs"]["expected-conclusion"]["default"] == ""
    (report,) = [s for s in action["runs"]["steps"] if s["name"] == "Report to the relay"]
    env = report["env"]["CRCR_INPUT_EXPECTED_CONCLUSION"]
    assert env == "${{ inputs.expected-conclusion }}"
    assert '"--expected-conclusion=$CRCR_INPUT_EXPECTED_CONCLUSION"' in report["run"]

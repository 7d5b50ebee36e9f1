"""The reporting job is read from GitHub Actions' and Buildkite's own variables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crcr.reporter.body import ReportError
from crcr.reporter.ci_env import (
    Provider,
    buildkite_conclusion,
    buildkite_run_context,
    detect_provider,
    github_run_context,
    load_dispatch,
)

Env = dict[str, str]


def test_the_provider_is_detected_from_the_flag_each_ci_sets(
    github_env: Env, buildkite_env: Env
) -> None:
    assert detect_provider(github_env) is Provider.GITHUB
    assert detect_provider(buildkite_env) is Provider.BUILDKITE
    with pytest.raises(ReportError, match=r"pass --provider github\|buildkite"):
        detect_provider({"CI": "true"})


def test_a_github_job_is_described_by_its_default_variables(github_env: Env) -> None:
    run = github_run_context(github_env, check_run_id="27182818284")
    assert run.workflow_name == "XPU CI"
    assert run.run_url == "https://github.com/intel/xpu-backend/actions/runs/9876543210"
    assert (run.run_id, run.run_attempt) == ("9876543210", "2")
    assert run.job_name == "test"
    assert run.check_run_id == "27182818284"


def test_github_job_name_option_wins_and_check_run_id_falls_back_like_the_reference(
    github_env: Env,
) -> None:
    env = github_env | {"GITHUB_SERVER_URL": "https://ghe.example.com/"}
    run = github_run_context(env, job_name="test (xpu, 1)")
    assert run.job_name == "test (xpu, 1)"
    assert run.check_run_id == "9876543210-2"
    assert run.run_url == "https://ghe.example.com/intel/xpu-backend/actions/runs/9876543210"


def test_a_missing_github_variable_is_named(github_env: Env) -> None:
    del github_env["GITHUB_WORKFLOW"]
    with pytest.raises(ReportError, match=r"^GITHUB_WORKFLOW is not set"):
        github_run_context(github_env)


def test_a_buildkite_job_is_described_by_the_agents_variables(buildkite_env: Env) -> None:
    run = buildkite_run_context(buildkite_env)
    assert run.workflow_name == "xpu-nightly"
    assert run.run_url == "https://buildkite.com/intel/xpu-nightly/builds/812"
    assert run.run_id == "0190a3c2-7e1f-4b8a-9c3d-5e6f7a8b9c0d"
    assert run.run_attempt == "2"  # retry count 1 is the second attempt
    assert run.job_name == ":pytorch: test xpu"
    assert run.check_run_id == "0190a3c2-8a2b-4c9d-8e0f-1a2b3c4d5e6f"


def test_buildkite_fallbacks_step_key_then_build_and_attempt(buildkite_env: Env) -> None:
    env = buildkite_env | {
        "BUILDKITE_LABEL": "",
        "BUILDKITE_JOB_ID": "",
        "BUILDKITE_RETRY_COUNT": "",
    }
    run = buildkite_run_context(env)
    assert run.job_name == "test-xpu"
    assert run.run_attempt == "1"
    assert run.check_run_id == "0190a3c2-7e1f-4b8a-9c3d-5e6f7a8b9c0d-1"


def test_buildkite_bad_retry_count_is_named(buildkite_env: Env) -> None:
    with pytest.raises(ReportError, match=r"^BUILDKITE_RETRY_COUNT must be a number, got 'x'"):
        buildkite_run_context(buildkite_env | {"BUILDKITE_RETRY_COUNT": "x"})


def test_buildkite_exit_status_gives_a_conclusion_in_a_post_command_hook(
    buildkite_env: Env,
) -> None:
    passed = buildkite_env | {"BUILDKITE_COMMAND_EXIT_STATUS": "0"}
    killed = buildkite_env | {"BUILDKITE_COMMAND_EXIT_STATUS": "137"}
    assert buildkite_conclusion(passed) == "success"
    assert buildkite_conclusion(killed) == "failure"
    assert buildkite_conclusion(buildkite_env) is None


def test_the_github_dispatch_is_the_client_payload_of_the_event_file(
    github_env: Env, dispatch_event: Path
) -> None:
    dispatch = load_dispatch(Provider.GITHUB, github_env)
    assert dispatch == json.loads(dispatch_event.read_text())["client_payload"]
    assert dispatch["delivery_id"] == "7f0e4c2a-3b1d-11ef-9d6e-2a8f1c4b5e61"


def test_a_run_not_started_by_a_dispatch_points_at_self_reports(
    github_env: Env, tmp_path: Path
) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"schedule": "0 3 * * *"}))
    env = github_env | {"GITHUB_EVENT_PATH": str(event), "GITHUB_EVENT_NAME": "schedule"}
    with pytest.raises(ReportError) as caught:
        load_dispatch(Provider.GITHUB, env)
    assert "event 'schedule' has no client_payload" in str(caught.value)
    assert "--event-type nightly|periodic --delivery-id SHA" in str(caught.value)


def test_an_unreadable_or_broken_event_file_is_named(github_env: Env, tmp_path: Path) -> None:
    missing = github_env | {"GITHUB_EVENT_PATH": str(tmp_path / "nope.json")}
    with pytest.raises(ReportError, match=r"^GITHUB_EVENT_PATH: cannot read"):
        load_dispatch(Provider.GITHUB, missing)
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(ReportError, match=r"^GITHUB_EVENT_PATH: not valid JSON"):
        load_dispatch(Provider.GITHUB, github_env | {"GITHUB_EVENT_PATH": str(broken)})


def test_a_buildkite_dispatch_comes_from_a_file_or_a_variable(
    buildkite_env: Env, tmp_path: Path
) -> None:
    client_payload = {"event_type": "push", "delivery_id": "d-1", "payload": {"after": "abc"}}
    payload_file = tmp_path / "dispatch.json"
    payload_file.write_text(json.dumps(client_payload))
    from_file = load_dispatch(Provider.BUILDKITE, buildkite_env, payload_file=str(payload_file))
    inline = buildkite_env | {"CRCR_DISPATCH_PAYLOAD": json.dumps(client_payload)}
    assert from_file == load_dispatch(Provider.BUILDKITE, inline) == client_payload


def test_a_buildkite_dispatch_must_be_given(buildkite_env: Env) -> None:
    with pytest.raises(ReportError, match=r"^no dispatch payload: pass --payload-file or set CRC"):
        load_dispatch(Provider.BUILDKITE, buildkite_env)


def test_a_bad_inline_dispatch_is_named_by_its_variable(buildkite_env: Env) -> None:
    env = buildkite_env | {"CRCR_DISPATCH_PAYLOAD": '{"event_type": "push"}'}
    with pytest.raises(ReportError, match=r"^CRCR_DISPATCH_PAYLOAD: client_payload.delivery_id"):
        load_dispatch(Provider.BUILDKITE, env)

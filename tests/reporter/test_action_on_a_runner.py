"""The composite action, run step by step as a runner would, against a live relay (SPEC §8).

The job has a bare interpreter first on PATH (a fresh venv made `--without-pip`), no
package index and no proxy that answers: the action must install nothing and reach
nothing but the OIDC token service and the relay. A relay outage leaves the job green
with a warning unless `fail-on-error` says otherwise; a 4xx is an error annotation.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.reporter.composite_runner import ActionRun, run_composite
from tests.reporter.live_stack import ACTIONS_REPO, Stack, actions_job, running_stack

ACTION_DIR = Path(__file__).parents[2] / "action" / "crcr-report"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """One relay and sandbox for the module."""
    with running_stack(tmp_path_factory.mktemp("action-e2e")) as running:
        yield running


@pytest.fixture(scope="module")
def closed_port() -> Iterator[int]:
    """A loopback port bound but never listening: every connection to it is refused."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with no pip and no packages: the runner's own python3, as far as crcr can tell."""
    venv = tmp_path_factory.mktemp("runner") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    return venv


def installed(venv: Path) -> list[str]:
    return sorted(path.name for path in venv.glob("lib/python*/site-packages/*"))


def runner_env(
    stack: Stack, work: Path, venv: Path, closed_port: int, event: Any
) -> dict[str, str]:
    """The job's variables; PATH has the bare venv first; only loopback is reachable."""
    env = actions_job(stack, work, event_name="repository_dispatch", event=event, run_id="8101")
    for inherited in ("PYTHONPATH", "VIRTUAL_ENV", "CRCR_CALLBACK_URL", "CRCR_STATE_DIR"):
        env.pop(inherited, None)
    nowhere = f"http://127.0.0.1:{closed_port}"
    return env | {
        "PATH": f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin",
        "PIP_INDEX_URL": f"{nowhere}/simple",
        "http_proxy": nowhere,
        "https_proxy": nowhere,
        "no_proxy": "127.0.0.1,localhost",
    }


def dispatch_event(stack: Stack, number: int, head_sha: str) -> dict[str, Any]:
    delivery_id = stack.open_pr(number, head_sha)
    return {
        "action": "pull_request",
        "client_payload": stack.client_payload(ACTIONS_REPO, delivery_id),
    }


def run_action(env: dict[str, str], work: Path, **inputs: str) -> ActionRun:
    return run_composite(
        ACTION_DIR,
        inputs,
        github={"job": env["GITHUB_JOB"], "workspace": str(work)},
        job={"check_run_id": "31337"},
        env=env,
        work=work / "action-steps",
    )


def test_in_progress_then_completed_reach_the_hud_with_nothing_installed(
    stack: Stack, tmp_path: Path, bare_python: Path, closed_port: int
) -> None:
    event = dispatch_event(stack, 301, "e5" * 20)
    env = runner_env(stack, tmp_path, bare_python, closed_port, event)
    callback = f"{stack.relay_url}/github/callback"

    started = run_action(env, tmp_path, status="in_progress", **{"callback-url": callback})
    completed = run_action(
        env,
        tmp_path,
        status="completed",
        conclusion="success",
        **{"test-results": '{"passed": 7, "failed": 0, "skipped": 1}', "callback-url": callback},
    )
    repeated = run_action(
        env, tmp_path, status="completed", conclusion="success", **{"callback-url": callback}
    )

    assert started.succeeded and completed.succeeded, started.log + completed.log
    assert started.outputs == {"http-status": "200", "outcome": "accepted"}
    assert completed.outputs == {"http-status": "200", "outcome": "accepted"}
    assert repeated.outputs == {"http-status": "200", "outcome": "duplicate"}, repeated.log
    [row] = stack.job_rows(301, ACTIONS_REPO)
    assert (row["status"], row["conclusion"], row["check_run_id"]) == (
        "completed",
        "success",
        "31337",
    )
    assert (row["passed"], row["skipped"]) == (7, 1)
    assert row["queue_time"] is not None and row["execution_time"] is not None
    assert installed(bare_python) == []
    assert "::" not in started.log + completed.log
    assert stack.actions.minted, "no token was minted"
    for run in (started, completed, repeated):
        assert not [token for token in stack.actions.minted if token in run.log]


def test_a_relay_outage_is_a_warning_and_the_job_goes_on(
    stack: Stack, tmp_path: Path, bare_python: Path, closed_port: int
) -> None:
    event = dispatch_event(stack, 302, "f6" * 20)
    env = runner_env(stack, tmp_path, bare_python, closed_port, event)
    down = f"http://127.0.0.1:{closed_port}/github/callback"

    run = run_action(env, tmp_path, status="in_progress", attempts="2", **{"callback-url": down})

    assert run.succeeded, run.log
    assert "::warning title=crcr report::gave up after 2 attempts: ConnectError" in run.stdout
    assert run.outputs == {"http-status": "", "outcome": "failed"}
    assert stack.job_rows(302, ACTIONS_REPO) == []


def test_fail_on_error_turns_an_outage_into_a_failed_step(
    stack: Stack, tmp_path: Path, bare_python: Path, closed_port: int
) -> None:
    event = dispatch_event(stack, 303, "a7" * 20)
    env = runner_env(stack, tmp_path, bare_python, closed_port, event)
    down = f"http://127.0.0.1:{closed_port}/github/callback"

    run = run_action(
        env,
        tmp_path,
        status="in_progress",
        attempts="1",
        **{"callback-url": down, "fail-on-error": "true"},
    )

    assert not run.succeeded
    assert run.steps[-1].returncode == 1
    assert "::warning title=crcr report::gave up after 1 attempts" in run.stdout
    assert run.steps[-1].outputs == {"http-status": "", "outcome": "failed"}


def test_a_refused_report_is_an_error_annotation_but_not_a_red_job(
    stack: Stack, tmp_path: Path, bare_python: Path, closed_port: int
) -> None:
    # A dispatch the relay never sent: it has no record of it (SPEC §5.6) and answers 400.
    event = dispatch_event(stack, 304, "b8" * 20)
    event["client_payload"] = {**event["client_payload"], "delivery_id": "not-a-dispatch-of-ours"}
    env = runner_env(stack, tmp_path, bare_python, closed_port, event)
    callback = f"{stack.relay_url}/github/callback"

    run = run_action(env, tmp_path, status="in_progress", **{"callback-url": callback})

    assert run.succeeded, run.log
    assert "::error title=crcr report::relay refused the report with HTTP 400" in run.stdout
    assert run.outputs == {"http-status": "400", "outcome": "refused"}


def test_a_wrong_input_is_an_error_annotation(
    stack: Stack, tmp_path: Path, bare_python: Path, closed_port: int
) -> None:
    event = dispatch_event(stack, 305, "c9" * 20)
    env = runner_env(stack, tmp_path, bare_python, closed_port, event)
    callback = f"{stack.relay_url}/github/callback"

    run = run_action(
        env, tmp_path, status="completed", conclusion="green", **{"callback-url": callback}
    )

    assert run.succeeded, run.log
    assert "::error title=crcr report::--conclusion must be one of" in run.stdout
    assert run.outputs == {"http-status": "", "outcome": "invalid"}


def test_a_missing_python_is_named(
    stack: Stack, tmp_path: Path, bare_python: Path, closed_port: int
) -> None:
    event = dispatch_event(stack, 306, "d0" * 20)
    env = runner_env(stack, tmp_path, bare_python, closed_port, event)
    callback = f"{stack.relay_url}/github/callback"

    run = run_action(
        env, tmp_path, status="in_progress", python="python2.7", **{"callback-url": callback}
    )
    failing = run_action(
        env,
        tmp_path,
        status="in_progress",
        python="python2.7",
        **{"callback-url": callback, "fail-on-error": "true"},
    )

    assert run.succeeded
    assert "::error title=crcr report::python2.7 is missing or older than Python 3.9" in run.stdout
    assert run.outputs == {"http-status": "", "outcome": "invalid"}
    assert failing.steps[-1].returncode == 2


def test_a_missing_junit_report_is_a_warning_and_the_result_still_goes(
    stack: Stack, tmp_path: Path, bare_python: Path, closed_port: int
) -> None:
    event = dispatch_event(stack, 307, "e1" * 20)
    env = runner_env(stack, tmp_path, bare_python, closed_port, event)
    callback = f"{stack.relay_url}/github/callback"

    started = run_action(env, tmp_path, status="in_progress", **{"callback-url": callback})
    inputs = {"callback-url": callback, "failed-tests": "reports/junit.xml"}
    completed = run_action(env, tmp_path, status="completed", conclusion="failure", **inputs)

    assert started.succeeded and completed.succeeded, completed.log
    assert "::warning title=crcr report::failed tests not sent: --failed-tests" in completed.stdout
    assert completed.outputs == {"http-status": "200", "outcome": "accepted"}
    [row] = stack.job_rows(307, ACTIONS_REPO)
    assert row["conclusion"] == "failure"

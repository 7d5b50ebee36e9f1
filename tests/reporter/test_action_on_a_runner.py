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
from dataclasses import dataclass
from pathlib import Path

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


@dataclass
class Runner:
    """A job's runner: the live relay, a bare python3, and only loopback reachable."""

    stack: Stack
    work: Path
    venv: Path
    closed_port: int

    @property
    def callback(self) -> str:
        return f"{self.stack.relay_url}/github/callback"

    @property
    def relay_down(self) -> str:
        return f"http://127.0.0.1:{self.closed_port}/github/callback"

    def dispatched_job(self, pr_number: int, *, delivery_id: str | None = None) -> dict[str, str]:
        """The job's variables for a fresh dispatch (or one claiming `delivery_id`)."""
        sent = self.stack.open_pr(pr_number, f"{pr_number:040x}")
        payload = self.stack.client_payload(ACTIONS_REPO, sent)
        if delivery_id is not None:
            payload = {**payload, "delivery_id": delivery_id}
        event = {"action": "pull_request", "client_payload": payload}
        env = actions_job(
            self.stack, self.work, event_name="repository_dispatch", event=event, run_id="8101"
        )
        for inherited in ("PYTHONPATH", "VIRTUAL_ENV", "CRCR_CALLBACK_URL", "CRCR_STATE_DIR"):
            env.pop(inherited, None)
        nowhere = f"http://127.0.0.1:{self.closed_port}"
        return env | {
            "PATH": f"{self.venv / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "PIP_INDEX_URL": f"{nowhere}/simple",
            "http_proxy": nowhere,
            "https_proxy": nowhere,
            "no_proxy": "127.0.0.1,localhost",
        }

    def run(self, env: dict[str, str], **inputs: str) -> ActionRun:
        """Run the action's steps with `inputs` (`callback_url` → `callback-url`, …)."""
        return run_composite(
            ACTION_DIR,
            {name.replace("_", "-"): value for name, value in inputs.items()},
            github={"job": env["GITHUB_JOB"], "workspace": str(self.work)},
            job={"check_run_id": "31337"},
            env=env,
            work=self.work / "action-steps",
        )


@pytest.fixture
def runner(stack: Stack, tmp_path: Path, bare_python: Path, closed_port: int) -> Runner:
    return Runner(stack, tmp_path, bare_python, closed_port)


def test_in_progress_then_completed_reach_the_hud_with_nothing_installed(runner: Runner) -> None:
    env = runner.dispatched_job(301)

    started = runner.run(env, status="in_progress", callback_url=runner.callback)
    counts = '{"passed": 7, "failed": 0, "skipped": 1}'
    completed = runner.run(
        env,
        status="completed",
        conclusion="success",
        test_results=counts,
        callback_url=runner.callback,
    )
    repeated = runner.run(
        env, status="completed", conclusion="success", callback_url=runner.callback
    )

    assert started.succeeded and completed.succeeded, started.log + completed.log
    assert started.outputs == {"http-status": "200", "outcome": "accepted"}
    assert completed.outputs == {"http-status": "200", "outcome": "accepted"}
    assert repeated.outputs == {"http-status": "200", "outcome": "duplicate"}, repeated.log
    [row] = runner.stack.job_rows(301, ACTIONS_REPO)
    assert (row["status"], row["conclusion"]) == ("completed", "success")
    assert row["check_run_id"] == "31337"
    assert (row["passed"], row["skipped"]) == (7, 1)
    assert row["queue_time"] is not None and row["execution_time"] is not None
    assert installed(runner.venv) == []
    assert "::" not in started.log + completed.log
    minted = runner.stack.actions.minted
    assert minted, "no token was minted"
    for run in (started, completed, repeated):
        assert not [token for token in minted if token in run.log]


def test_a_relay_outage_is_a_warning_and_the_job_goes_on(runner: Runner) -> None:
    env = runner.dispatched_job(302)

    run = runner.run(env, status="in_progress", attempts="2", callback_url=runner.relay_down)

    assert run.succeeded, run.log
    assert "::warning title=crcr report::gave up after 2 attempts: ConnectError" in run.stdout
    assert run.outputs == {"http-status": "", "outcome": "failed"}
    assert runner.stack.job_rows(302, ACTIONS_REPO) == []


def test_fail_on_error_turns_an_outage_into_a_failed_step(runner: Runner) -> None:
    env = runner.dispatched_job(303)

    run = runner.run(
        env,
        status="in_progress",
        attempts="1",
        fail_on_error="true",
        callback_url=runner.relay_down,
    )

    assert not run.succeeded
    assert run.steps[-1].returncode == 1
    assert "::warning title=crcr report::gave up after 1 attempts" in run.stdout
    assert run.steps[-1].outputs == {"http-status": "", "outcome": "failed"}


def test_a_refused_report_is_an_error_annotation_but_not_a_red_job(runner: Runner) -> None:
    # A dispatch the relay never sent: it has no record of it (SPEC §5.6) and answers 400.
    env = runner.dispatched_job(304, delivery_id="not-a-dispatch-of-ours")

    run = runner.run(env, status="in_progress", callback_url=runner.callback)

    assert run.succeeded, run.log
    assert "::error title=crcr report::relay refused the report with HTTP 400" in run.stdout
    assert run.outputs == {"http-status": "400", "outcome": "refused"}


def test_a_wrong_input_is_an_error_annotation(runner: Runner) -> None:
    env = runner.dispatched_job(305)

    run = runner.run(env, status="completed", conclusion="green", callback_url=runner.callback)

    assert run.succeeded, run.log
    assert "::error title=crcr report::--conclusion must be one of" in run.stdout
    assert run.outputs == {"http-status": "", "outcome": "invalid"}


def test_a_missing_python_is_named(runner: Runner) -> None:
    env = runner.dispatched_job(306)
    inputs = {"status": "in_progress", "python": "python2.7", "callback_url": runner.callback}

    run = runner.run(env, **inputs)
    failing = runner.run(env, **inputs, fail_on_error="true")

    assert run.succeeded
    assert "::error title=crcr report::python2.7 is missing or older than Python 3.9" in run.stdout
    assert run.outputs == {"http-status": "", "outcome": "invalid"}
    assert failing.steps[-1].returncode == 2


def test_a_missing_junit_report_is_a_warning_and_the_result_still_goes(runner: Runner) -> None:
    env = runner.dispatched_job(307)

    started = runner.run(env, status="in_progress", callback_url=runner.callback)
    completed = runner.run(
        env,
        status="completed",
        conclusion="failure",
        failed_tests="reports/junit.xml",
        callback_url=runner.callback,
    )

    assert started.succeeded and completed.succeeded, completed.log
    assert "::warning title=crcr report::failed tests not sent: --failed-tests" in completed.stdout
    assert completed.outputs == {"http-status": "200", "outcome": "accepted"}
    [row] = runner.stack.job_rows(307, ACTIONS_REPO)
    assert row["conclusion"] == "failure"

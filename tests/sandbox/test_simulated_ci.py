"""Simulated downstream CI: a dispatch starts a run whose jobs report like Actions jobs.

A tiny relay stand-in receives the callbacks (with the sandbox issuer's token endpoint
beside it), so each scenario asserts on the bodies and tokens a real relay would get.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import jwt
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route
from tests.waiting import eventually

from crcr.reporter.retry import RetryPolicy
from crcr.sandbox.github_identity import SandboxApp
from crcr.sandbox.github_model import Dispatch
from crcr.sandbox.github_server import create_sandbox_app
from crcr.sandbox.github_state import SandboxGitHub
from crcr.sandbox.oidc_issuer import SandboxIssuer, SigningKey
from crcr.sandbox.simulated_ci import SimulatedCI
from crcr.sandbox.simulated_ci_model import Duration, JobSpec, OutcomeRates, WorkflowSpec

RELAY = "http://relay.test"
AUDIENCE = "pytorch-cross-repo-ci-relay"
UPSTREAM = "pytorch/pytorch"
BACKEND = "acme/npu-backend"
HEAD_SHA = "c0ffee" + "0" * 34

QUICK = Duration.fixed(0.0)
FOREVER = Duration.fixed(10_000.0)


@dataclass
class Callbacks:
    """What the relay stand-in received: bodies with the claims of their tokens."""

    received: list[dict[str, Any]] = field(default_factory=list)
    refuse: Callable[[dict[str, Any]], bool] = lambda body: False

    def of(self, job_name: str, attempt: str = "1") -> list[dict[str, Any]]:
        return [
            r
            for r in self.received
            if r["body"]["workflow"]["job_name"] == job_name
            and r["body"]["workflow"]["run_attempt"] == attempt
        ]

    def statuses(self, job_name: str, attempt: str = "1") -> list[tuple[str, str | None]]:
        return [
            (r["body"]["workflow"]["status"], r["body"]["workflow"]["conclusion"])
            for r in self.of(job_name, attempt)
        ]


@pytest.fixture(scope="module")
def signing_key() -> SigningKey:
    return SigningKey.generate()


@pytest.fixture(scope="module")
def app_identity() -> SandboxApp:
    return SandboxApp.generate(app_id=77)


@pytest.fixture
def issuer(signing_key: SigningKey) -> SandboxIssuer:
    return SandboxIssuer(f"{RELAY}/oidc", key=signing_key)


@pytest.fixture
def github(app_identity: SandboxApp) -> SandboxGitHub:
    sandbox = SandboxGitHub(app=app_identity)
    sandbox.install_app(BACKEND, "acme/other")
    return sandbox


@pytest.fixture
def callbacks() -> Callbacks:
    return Callbacks()


@pytest.fixture
async def relay_client(
    issuer: SandboxIssuer, callbacks: Callbacks, signing_key: SigningKey
) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client whose requests reach the issuer and a recording callback endpoint."""

    async def callback(request: Request) -> JSONResponse:
        token = request.headers["authorization"].removeprefix("Bearer ")
        claims = jwt.decode(
            token,
            signing_key.private_key.public_key(),
            algorithms=["RS256"],
            audience=AUDIENCE,
            issuer=issuer.issuer,
        )
        body = await request.json()
        callbacks.received.append({"body": body, "claims": claims})
        if callbacks.refuse(body):
            return JSONResponse({"error": "workflow.run_id: not what I expected"}, 400)
        return JSONResponse({"status": "accepted"})

    app = Starlette(
        routes=[
            Route("/github/callback", callback, methods=["POST"]),
            Mount("/oidc", routes=issuer.routes()),
        ]
    )
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as client:
        yield client


def sandbox_api(github: SandboxGitHub, repo: str) -> httpx.AsyncClient:
    """A client of the sandbox REST API holding an installation token for `repo`."""
    token, _ = github.issue_token(github.installation_of_repo(repo).id)
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_sandbox_app(github)),
        base_url="http://github.test",
        headers={"authorization": f"token {token}"},
    )


@pytest.fixture
async def github_api(github: SandboxGitHub) -> AsyncIterator[httpx.AsyncClient]:
    """The sandbox REST API with an installation token for the backend repo."""
    async with sandbox_api(github, BACKEND) as client:
        yield client


def simulated_ci(
    github: SandboxGitHub,
    issuer: SandboxIssuer,
    client: httpx.AsyncClient,
    spec: WorkflowSpec,
    **options: Any,
) -> SimulatedCI:
    return SimulatedCI(
        github,
        issuer,
        callback_url=f"{RELAY}/github/callback",
        workflows={BACKEND: spec},
        client=client,
        seed=1,
        poll_interval=0.005,
        retry_policy=RetryPolicy(attempts=1),
        **options,
    )


def pr_dispatch(number: int, action: str, *, repo: str = BACKEND) -> Dispatch:
    payload = {
        "action": action,
        "number": number,
        "pull_request": {"number": number, "head": {"sha": HEAD_SHA}, "labels": []},
        "repository": {"full_name": UPSTREAM},
    }
    client_payload = {
        "event_type": "pull_request",
        "delivery_id": str(uuid.uuid4()),
        "payload": payload,
    }
    return Dispatch(repo, "pull_request", client_payload, time.time())


# --- a dispatch starts a run ----------------------------------------------------------


async def test_a_dispatch_runs_every_job_which_reports_in_progress_then_completed(
    github: SandboxGitHub,
    issuer: SandboxIssuer,
    relay_client: httpx.AsyncClient,
    callbacks: Callbacks,
) -> None:
    spec = WorkflowSpec(
        "npu-ci",
        jobs=(
            JobSpec("lint", QUICK),
            JobSpec("test", QUICK, matrix=("1, 2", "2, 2"), tests=40),
        ),
    )
    dispatch = pr_dispatch(7, "opened")
    async with simulated_ci(github, issuer, relay_client, spec) as ci:
        github.record_dispatch(dispatch)
        await eventually(lambda: len(callbacks.received) == 6)
        [run] = ci.runs(BACKEND)
        run_id = run.run_id
        await eventually(lambda: github.repo(BACKEND).workflow_runs[run_id].status == "completed")

    assert github.repo(BACKEND).workflow_runs[run_id].conclusion == "success"
    for job in ("lint", "test (1, 2)", "test (2, 2)"):
        assert callbacks.statuses(job) == [("in_progress", None), ("completed", "success")]
        started, completed = (r["body"] for r in callbacks.of(job))
        for body in (started, completed):
            assert {k: body[k] for k in ("event_type", "delivery_id", "payload")} == (
                dispatch.client_payload
            )
            assert body["workflow"]["name"] == "npu-ci"
            assert body["workflow"]["run_id"] == str(run_id)
            assert body["workflow"]["run_attempt"] == "1"
            assert body["workflow"]["url"].endswith(f"/{BACKEND}/actions/runs/{run_id}")
        assert completed["workflow"]["started_at"] == started["workflow"]["started_at"]
        assert completed["workflow"]["completed_at"] is not None
    assert "test_results" not in callbacks.of("lint")[1]["body"]["workflow"]
    assert callbacks.of("test (1, 2)")[1]["body"]["workflow"]["test_results"]["failed"] == 0
    check_run_ids = {r["body"]["workflow"]["check_run_id"] for r in callbacks.received}
    assert len(check_run_ids) == 3, "every job has its own check run"
    assert {r["claims"]["repository"] for r in callbacks.received} == {BACKEND}
    assert {r["claims"]["run_id"] for r in callbacks.received} == {str(run_id)}


async def test_a_push_starts_a_run_and_other_repos_start_nothing(
    github: SandboxGitHub,
    issuer: SandboxIssuer,
    relay_client: httpx.AsyncClient,
    callbacks: Callbacks,
) -> None:
    spec = WorkflowSpec("npu-ci", jobs=(JobSpec("build", QUICK),))
    push = Dispatch(
        BACKEND,
        "push",
        {"event_type": "push", "delivery_id": "d-push", "payload": {"after": HEAD_SHA}},
        time.time(),
    )
    async with simulated_ci(github, issuer, relay_client, spec) as ci:
        github.record_dispatch(pr_dispatch(3, "opened", repo="acme/other"))
        github.record_dispatch(push)
        await eventually(lambda: len(callbacks.received) == 2)
        assert [run.pr_number for run in ci.runs()] == [None]
    assert {r["body"]["delivery_id"] for r in callbacks.received} == {"d-push"}


async def test_a_refused_report_is_counted_as_an_error_and_the_job_carries_on(
    github: SandboxGitHub,
    issuer: SandboxIssuer,
    relay_client: httpx.AsyncClient,
    callbacks: Callbacks,
) -> None:
    callbacks.refuse = lambda body: body["workflow"]["status"] == "completed"
    spec = WorkflowSpec("npu-ci", jobs=(JobSpec("build", QUICK),))
    async with simulated_ci(github, issuer, relay_client, spec) as ci:
        github.record_dispatch(pr_dispatch(1, "opened"))
        await eventually(lambda: ci.snapshot().report_errors == 1)
        snapshot = ci.snapshot()
    assert snapshot.reports_sent == 1
    assert snapshot.last_error is not None and "HTTP 400" in snapshot.last_error
    assert [record.verdict for record in ci.reporter.records] == ["accepted", "error"]


# --- cancellation, re-runs, hangs -----------------------------------------------------


async def test_closing_a_pr_cancels_its_running_jobs_and_drops_queued_ones(
    github: SandboxGitHub,
    issuer: SandboxIssuer,
    relay_client: httpx.AsyncClient,
    callbacks: Callbacks,
) -> None:
    spec = WorkflowSpec(
        "npu-ci",
        jobs=(JobSpec("test", FOREVER),),
    )
    async with simulated_ci(github, issuer, relay_client, spec) as ci:
        github.record_dispatch(pr_dispatch(5, "opened"))
        github.record_dispatch(pr_dispatch(6, "opened"))
        await eventually(lambda: len(callbacks.received) == 2)
        github.record_dispatch(pr_dispatch(5, "closed"))
        await eventually(lambda: len(callbacks.received) == 3)
        closed_run, open_run = ci.runs()
        # A job's phase moves on only once its report has had its answer.
        await eventually(
            lambda: (ci.snapshot().jobs_running, ci.snapshot().jobs_finished) == (1, 1)
        )
    last = callbacks.received[-1]["body"]
    assert last["payload"]["pull_request"]["number"] == 5
    assert (last["workflow"]["status"], last["workflow"]["conclusion"]) == (
        "completed",
        "cancelled",
    )
    assert github.repo(BACKEND).workflow_runs[closed_run.run_id].conclusion == "cancelled"
    assert github.repo(BACKEND).workflow_runs[open_run.run_id].status == "in_progress"
    assert len(ci.runs()) == 2, "a closed dispatch starts no run of its own"


async def test_a_crcr_cancel_cancels_the_superseded_deliverys_run_only(
    github: SandboxGitHub,
    issuer: SandboxIssuer,
    relay_client: httpx.AsyncClient,
    callbacks: Callbacks,
) -> None:
    spec = WorkflowSpec("npu-ci", jobs=(JobSpec("test", FOREVER),))
    async with simulated_ci(github, issuer, relay_client, spec) as ci:
        old, new = pr_dispatch(5, "opened"), pr_dispatch(5, "synchronize")
        github.record_dispatch(old)
        github.record_dispatch(new)
        await eventually(lambda: len(callbacks.received) == 2)
        cancel = {
            "event_type": "crcr_cancel",
            "delivery_id": "crcr-cancel-x",
            "payload": {"repository": {"full_name": UPSTREAM}},
            "cancel": {"delivery_id": old.client_payload["delivery_id"], "head_sha": HEAD_SHA},
        }
        github.record_dispatch(Dispatch(BACKEND, "crcr_cancel", cancel, time.time()))
        await eventually(lambda: len(callbacks.received) == 3)
        old_run, new_run = ci.runs()
    last = callbacks.received[-1]["body"]
    assert last["delivery_id"] == old.client_payload["delivery_id"]
    assert last["workflow"]["conclusion"] == "cancelled"
    assert github.repo(BACKEND).workflow_runs[old_run.run_id].conclusion == "cancelled"
    assert github.repo(BACKEND).workflow_runs[new_run.run_id].status == "in_progress"
    assert len(ci.runs()) == 2, "a crcr_cancel starts no run of its own"


async def test_a_queued_job_of_a_closed_pr_never_reports(
    github: SandboxGitHub,
    issuer: SandboxIssuer,
    relay_client: httpx.AsyncClient,
    callbacks: Callbacks,
) -> None:
    spec = WorkflowSpec("npu-ci", jobs=(JobSpec("test", QUICK),), queue_delay=FOREVER)
    async with simulated_ci(github, issuer, relay_client, spec) as ci:
        github.record_dispatch(pr_dispatch(5, "opened"))
        await eventually(lambda: ci.snapshot().jobs_queued == 1)
        github.record_dispatch(pr_dispatch(5, "closed"))
        await eventually(lambda: ci.snapshot().jobs_queued == 0)
        [run] = ci.runs()
    assert callbacks.received == []
    assert [job.phase for job in run.current.jobs.values()] == ["dropped"]


async def test_rerunning_failed_jobs_starts_attempt_two_of_just_those_jobs(
    github: SandboxGitHub,
    issuer: SandboxIssuer,
    relay_client: httpx.AsyncClient,
    github_api: httpx.AsyncClient,
    callbacks: Callbacks,
) -> None:
    spec = WorkflowSpec(
        "npu-ci",
        jobs=(
            JobSpec("build", QUICK),
            JobSpec("test", QUICK, outcomes=OutcomeRates(flaky=1.0)),
        ),
    )
    async with simulated_ci(github, issuer, relay_client, spec) as ci:
        github.record_dispatch(pr_dispatch(9, "synchronize"))
        await eventually(lambda: len(callbacks.received) == 4)
        [run] = ci.runs()
        await eventually(
            lambda: github.repo(BACKEND).workflow_runs[run.run_id].conclusion is not None
        )
        assert github.repo(BACKEND).workflow_runs[run.run_id].conclusion == "failure"
        response = await github_api.post(
            f"/repos/{BACKEND}/actions/runs/{run.run_id}/rerun-failed-jobs"
        )
        assert response.status_code == 201
        await eventually(lambda: len(callbacks.received) == 6)
        await eventually(
            lambda: github.repo(BACKEND).workflow_runs[run.run_id].conclusion is not None
        )

    assert callbacks.statuses("test", "1") == [("in_progress", None), ("completed", "failure")]
    assert callbacks.statuses("test", "2") == [("in_progress", None), ("completed", "success")]
    assert callbacks.statuses("build", "2") == [], "a green job is not re-run"
    attempt_two = callbacks.of("test", "2")
    assert {r["claims"]["run_attempt"] for r in attempt_two} == {"2"}
    assert attempt_two[0]["body"]["workflow"]["run_id"] == str(run.run_id)
    assert github.repo(BACKEND).workflow_runs[run.run_id].conclusion == "success"


async def test_a_hanging_job_reports_in_progress_and_never_completes(
    github: SandboxGitHub,
    issuer: SandboxIssuer,
    relay_client: httpx.AsyncClient,
    github_api: httpx.AsyncClient,
    callbacks: Callbacks,
) -> None:
    spec = WorkflowSpec(
        "npu-ci",
        jobs=(
            JobSpec("hung", QUICK, outcomes=OutcomeRates(hang=1.0)),
            JobSpec("fine", QUICK),
        ),
    )
    async with simulated_ci(github, issuer, relay_client, spec) as ci:
        github.record_dispatch(pr_dispatch(4, "opened"))
        await eventually(lambda: callbacks.statuses("fine")[-1:] == [("completed", "success")])
        # The job's phase turns "completed" only once its report has had its answer,
        # which is after the relay has already seen the callback.
        await eventually(lambda: ci.snapshot().jobs_finished == 1)
        await eventually(lambda: ci.snapshot().jobs_hanging == 1)
        [run] = ci.runs()
        github.record_dispatch(pr_dispatch(4, "closed"))
        rerun = await github_api.post(f"/repos/{BACKEND}/actions/runs/{run.run_id}/rerun")
        snapshot = ci.snapshot()
    assert callbacks.statuses("hung") == [("in_progress", None)]
    assert snapshot.jobs_hanging == 1 and snapshot.jobs_finished == 1
    assert github.repo(BACKEND).workflow_runs[run.run_id].status == "in_progress"
    assert rerun.status_code == 403, "GitHub refuses to re-run a run that is still going"


# --- time -----------------------------------------------------------------------------


async def test_the_speed_factor_divides_every_wait(
    github: SandboxGitHub,
    issuer: SandboxIssuer,
    relay_client: httpx.AsyncClient,
    callbacks: Callbacks,
) -> None:
    waits: list[float] = []

    async def recording_sleep(seconds: float) -> None:
        waits.append(seconds)
        await asyncio.sleep(0)

    spec = WorkflowSpec(
        "npu-ci",
        jobs=(JobSpec("test", Duration.fixed(1200.0)),),
        queue_delay=Duration.fixed(30.0),
    )
    async with simulated_ci(github, issuer, relay_client, spec, speed=60.0, sleep=recording_sleep):
        github.record_dispatch(pr_dispatch(2, "opened"))
        await eventually(lambda: len(callbacks.received) == 2)
    assert waits == [0.5, 20.0]
    assert callbacks.statuses("test") == [("in_progress", None), ("completed", "success")]


def test_speed_must_be_positive(github: SandboxGitHub, issuer: SandboxIssuer) -> None:
    spec = WorkflowSpec("npu-ci", jobs=(JobSpec("test", QUICK),))
    with pytest.raises(ValueError, match="speed must be positive"):
        SimulatedCI(github, issuer, callback_url=RELAY, workflows={BACKEND: spec}, speed=0)

"""A job reports `in_progress` then `completed`, from the CI environment to the relay."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import jwt
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

from crcr.reporter.body import ReportError
from crcr.reporter.ci_env import Provider
from crcr.reporter.report import ReportInputs, deliver_report, prepare_report
from crcr.reporter.token import TokenError
from crcr.sandbox.oidc_issuer import SandboxIssuer
from crcr.sandbox.reporter_send import httpx_send

Env = dict[str, str]
T0 = datetime(2024, 6, 1, 12, 0, 0, tzinfo=UTC)
SHA = "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567"


class RecordingRelay:
    """Accepts every callback and keeps the verified repository and body of each."""

    def __init__(self, issuer: SandboxIssuer) -> None:
        self.issuer = issuer
        self.callbacks: list[tuple[str, dict[str, Any]]] = []

    async def callback(self, request: Request) -> JSONResponse:
        token = request.headers["authorization"].removeprefix("Bearer ")
        (jwk,) = self.issuer.jwks()["keys"]
        claims = jwt.decode(
            token,
            jwt.PyJWK(jwk).key,
            algorithms=["RS256"],
            audience="pytorch-cross-repo-ci-relay",
            issuer=self.issuer.issuer,
        )
        self.callbacks.append((claims["repository"], json.loads(await request.body())))
        return JSONResponse({"status": "ok"})


@pytest.fixture(scope="module")
def issuer() -> SandboxIssuer:
    return SandboxIssuer("http://sandbox.test/oidc")


@pytest.fixture
def relay(issuer: SandboxIssuer) -> RecordingRelay:
    return RecordingRelay(issuer)


@pytest.fixture
async def client(relay: RecordingRelay) -> AsyncIterator[httpx.AsyncClient]:
    app = Starlette(
        routes=[
            Mount("/oidc", routes=relay.issuer.routes()),
            Route("/github/callback", relay.callback, methods=["POST"]),
        ]
    )
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as http:
        yield http


@pytest.fixture
def job_env(github_env: Env, issuer: SandboxIssuer) -> Env:
    """A GitHub job with `id-token: write`, running in intel/xpu-backend."""
    request_token = issuer.issue_request_token(issuer.actions_claims("intel/xpu-backend"))
    return github_env | {
        "ACTIONS_ID_TOKEN_REQUEST_URL": issuer.token_request_url,
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN": request_token,
    }


async def test_a_job_reports_start_then_finish_and_the_finish_remembers_the_start(
    job_env: Env, relay: RecordingRelay, client: httpx.AsyncClient
) -> None:
    started = prepare_report(ReportInputs(status="in_progress"), job_env, now=T0)
    await deliver_report(
        started,
        job_env,
        callback_url="http://sandbox.test/github/callback",
        audience="pytorch-cross-repo-ci-relay",
        send=httpx_send(client),
    )
    finished = prepare_report(
        ReportInputs(
            status="completed",
            conclusion="success",
            test_results='{"passed": 10, "failed": 0, "skipped": 1}',
        ),
        job_env,
        now=T0 + timedelta(minutes=42),
    )
    outcome = await deliver_report(
        finished,
        job_env,
        callback_url="http://sandbox.test/github/callback",
        audience="pytorch-cross-repo-ci-relay",
        send=httpx_send(client),
    )
    assert outcome.verdict == "accepted"
    (repo_1, first), (repo_2, second) = relay.callbacks
    assert repo_1 == repo_2 == "intel/xpu-backend"
    assert first["delivery_id"] == second["delivery_id"] == "7f0e4c2a-3b1d-11ef-9d6e-2a8f1c4b5e61"
    assert first["workflow"]["started_at"] == "2024-06-01T12:00:00.000Z"
    assert second["workflow"]["started_at"] == "2024-06-01T12:00:00.000Z"
    assert second["workflow"]["completed_at"] == "2024-06-01T12:42:00.000Z"
    assert second["workflow"]["test_results"] == {"passed": 10, "failed": 0, "skipped": 1}


async def test_without_a_token_nothing_is_sent(
    github_env: Env, relay: RecordingRelay, client: httpx.AsyncClient
) -> None:
    report = prepare_report(ReportInputs(status="in_progress"), github_env, now=T0)
    with pytest.raises(TokenError, match="permissions: id-token: write"):
        await deliver_report(
            report,
            github_env,  # no ACTIONS_ID_TOKEN_REQUEST_* variables
            callback_url="http://sandbox.test/github/callback",
            audience="pytorch-cross-repo-ci-relay",
            send=httpx_send(client),
        )
    assert relay.callbacks == []
    assert report.started_file is not None
    assert not report.started_file.exists()


async def test_a_repeated_in_progress_does_not_move_the_remembered_start(
    job_env: Env, client: httpx.AsyncClient
) -> None:
    for minutes in (0, 5):
        report = prepare_report(
            ReportInputs(status="in_progress"), job_env, now=T0 + timedelta(minutes=minutes)
        )
        await deliver_report(
            report,
            job_env,
            callback_url="http://sandbox.test/github/callback",
            audience="pytorch-cross-repo-ci-relay",
            send=httpx_send(client),
        )
    finished = prepare_report(
        ReportInputs(status="completed", conclusion="failure"), job_env, now=T0
    )
    assert finished.body["workflow"]["started_at"] == "2024-06-01T12:00:00.000Z"


def test_another_job_of_the_same_run_does_not_inherit_the_start(job_env: Env) -> None:
    started = prepare_report(ReportInputs(status="in_progress"), job_env, now=T0)
    assert started.started_file is not None
    started.started_file.write_text(json.dumps({"started_at": "2024-06-01T12:00:00.000Z"}))
    other = prepare_report(
        ReportInputs(status="completed", conclusion="success", job_name="lint"), job_env, now=T0
    )
    assert other.body["workflow"]["started_at"] is None


def test_a_buildkite_nightly_self_report_needs_no_dispatch(buildkite_env: Env) -> None:
    env = buildkite_env | {"BUILDKITE_COMMAND_EXIT_STATUS": "1"}
    report = prepare_report(
        ReportInputs(status="completed", event_type="nightly", delivery_id=SHA), env, now=T0
    )
    assert report.provider is Provider.BUILDKITE
    assert report.started_file is None  # Buildkite has no RUNNER_TEMP
    assert report.body["event_type"] == "nightly"
    assert report.body["delivery_id"] == SHA
    workflow = report.body["workflow"]
    assert workflow["conclusion"] == "failure"  # from the command's exit status
    assert (workflow["name"], workflow["run_attempt"]) == ("xpu-nightly", "2")


def test_a_buildkite_dispatch_is_echoed_from_the_payload_variable(buildkite_env: Env) -> None:
    client_payload = {"event_type": "push", "delivery_id": "d-9", "payload": {"after": SHA}}
    env = buildkite_env | {"CRCR_DISPATCH_PAYLOAD": json.dumps(client_payload)}
    report = prepare_report(ReportInputs(status="in_progress"), env, now=T0)
    assert {k: v for k, v in report.body.items() if k != "workflow"} == client_payload


def test_option_mistakes_are_reported_before_a_missing_ci() -> None:
    with pytest.raises(ReportError, match="--conclusion is required"):
        prepare_report(ReportInputs(status="completed"), {}, now=T0)
    with pytest.raises(ReportError, match="cannot tell the CI system"):
        prepare_report(ReportInputs(status="in_progress"), {}, now=T0)
    with pytest.raises(ReportError, match="--provider must be auto, github or buildkite"):
        prepare_report(ReportInputs(status="in_progress", provider="jenkins"), {}, now=T0)

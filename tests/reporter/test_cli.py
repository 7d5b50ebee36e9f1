"""`crcr report` end to end: options in, a real HTTP callback out, exit codes and messages."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import typer
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from typer.testing import CliRunner

from crcr.reporter import cli as reporter_cli

Env = dict[str, str | None]
MINTED_TOKEN = "eyJhbGciOiJSUzI1NiJ9.eyJyZXBvc2l0b3J5IjoiaW50ZWwveHB1In0.bWludGVk"
REQUEST_TOKEN = "runtime-request-token-secret"


@dataclass
class RelayAndRuntime:
    """One server playing the Actions token endpoint and the relay's callback route."""

    answers: list[Response] = field(default_factory=list)
    received: list[dict[str, Any]] = field(default_factory=list)
    audiences: list[str] = field(default_factory=list)

    async def token(self, request: Request) -> Response:
        if request.headers.get("authorization") != f"Bearer {REQUEST_TOKEN}":
            return JSONResponse({"message": "Bad credentials"}, status_code=401)
        self.audiences.append(request.query_params.get("audience", ""))
        return JSONResponse({"count": 1, "value": MINTED_TOKEN})

    async def callback(self, request: Request) -> Response:
        assert request.headers["authorization"] == f"Bearer {MINTED_TOKEN}"
        self.received.append(json.loads(await request.body()))
        return self.answers.pop(0) if self.answers else JSONResponse({"status": "ok"})


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[RelayAndRuntime, str]]:
    """A real HTTP server on a free port, so the CLI's own client and timeouts are used."""
    stub = RelayAndRuntime()
    app = Starlette(
        routes=[
            Route("/idtoken", stub.token),
            Route("/github/callback", stub.callback, methods=["POST"]),
        ]
    )
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    uvicorn_server = uvicorn.Server(config)
    thread = threading.Thread(target=uvicorn_server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not uvicorn_server.started:
        assert time.monotonic() < deadline, "the stub server did not start"
        time.sleep(0.01)
    port = uvicorn_server.servers[0].sockets[0].getsockname()[1]
    yield stub, f"http://127.0.0.1:{port}"
    uvicorn_server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture
def stub(server: tuple[RelayAndRuntime, str]) -> RelayAndRuntime:
    relay = server[0]
    relay.answers.clear()
    relay.received.clear()
    relay.audiences.clear()
    return relay


@pytest.fixture
def cli_env(github_env: dict[str, str], server: tuple[RelayAndRuntime, str]) -> Env:
    base = server[1]
    env: Env = dict(github_env)
    env |= {
        "ACTIONS_ID_TOKEN_REQUEST_URL": f"{base}/idtoken?api-version=2.0",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN": REQUEST_TOKEN,
        "CRCR_CALLBACK_URL": f"{base}/github/callback",
        "BUILDKITE": None,
        "CRCR_DISPATCH_PAYLOAD": None,
        "CRCR_STATE_DIR": None,
        "CRCR_CHECK_RUN_ID": None,
    }
    return env


def crcr(args: list[str], env: Env) -> Any:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """crcr (test harness)."""

    reporter_cli.register(app)
    return CliRunner().invoke(app, ["report", *args], env=env)


def test_dry_run_prints_the_body_and_mints_nothing(cli_env: Env, stub: RelayAndRuntime) -> None:
    result = crcr(["--status", "in_progress", "--job-name", "test (xpu)", "--dry-run"], cli_env)
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["delivery_id"] == "7f0e4c2a-3b1d-11ef-9d6e-2a8f1c4b5e61"
    assert body["workflow"]["job_name"] == "test (xpu)"
    assert stub.audiences == []


def test_an_in_progress_report_is_delivered_with_a_token_for_our_audience(
    cli_env: Env, stub: RelayAndRuntime
) -> None:
    result = crcr(["--status", "in_progress", "--check-run-id", "27182818284"], cli_env)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == "crcr report: HTTP 200: relay accepted the report"
    assert stub.audiences == ["pytorch-cross-repo-ci-relay"]
    (body,) = stub.received
    assert body["workflow"]["status"] == "in_progress"
    assert body["workflow"]["check_run_id"] == "27182818284"
    assert MINTED_TOKEN not in result.output + result.stderr


def test_a_duplicate_is_success(cli_env: Env, stub: RelayAndRuntime) -> None:
    stub.answers.append(JSONResponse({"status": "duplicate"}))
    result = crcr(["--status", "completed", "--conclusion", "success"], cli_env)
    assert result.exit_code == 0
    assert "already had this report" in result.stdout


def test_a_refusal_exits_1_with_the_relays_message_and_never_the_token(
    cli_env: Env, stub: RelayAndRuntime
) -> None:
    # A careless relay that echoes the token must not get it into the CI log.
    stub.answers.append(JSONResponse({"error": f"stale dispatch for {MINTED_TOKEN}"}, 400))
    result = crcr(["--status", "completed", "--conclusion", "failure"], cli_env)
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        "crcr report: relay refused the report with HTTP 400: stale dispatch for [token]"
    )
    for secret in (MINTED_TOKEN, REQUEST_TOKEN):
        assert secret not in result.output + result.stderr


def test_a_job_without_id_token_permission_exits_1_naming_it(cli_env: Env) -> None:
    env = cli_env | {"ACTIONS_ID_TOKEN_REQUEST_URL": None, "ACTIONS_ID_TOKEN_REQUEST_TOKEN": None}
    result = crcr(["--status", "in_progress"], env)
    assert result.exit_code == 1
    assert "permissions: id-token: write" in result.stderr


@pytest.mark.parametrize(
    ("args", "overrides", "message"),
    [
        (["--status", "done"], {}, "crcr report: --status must be in_progress or completed"),
        (["--status", "completed"], {}, "crcr report: --conclusion is required"),
        (["--status", "in_progress"], {"CRCR_CALLBACK_URL": None}, "crcr report: no callback URL"),
        (
            ["--status", "in_progress"],
            {"GITHUB_ACTIONS": None},
            "crcr report: cannot tell the CI system",
        ),
    ],
)
def test_usage_mistakes_exit_2_with_one_line(
    cli_env: Env, args: list[str], overrides: Env, message: str, stub: RelayAndRuntime
) -> None:
    result = crcr(args, cli_env | overrides)
    assert result.exit_code == 2
    assert result.stderr.startswith(message)
    assert result.stderr.count("\n") == 1
    assert stub.received == []

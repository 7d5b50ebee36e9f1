"""The reporter mints its OIDC token from the CI system, with our audience, and never shows it."""

from __future__ import annotations

import asyncio
import os
import stat
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import jwt
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

from crcr.reporter.ci_env import Provider
from crcr.reporter.retry import RetryPolicy
from crcr.reporter.token import (
    DEFAULT_AUDIENCE,
    FreshTokens,
    TokenError,
    github_token_url,
    mint_buildkite_token,
    mint_github_token,
    mint_token,
)
from crcr.sandbox.oidc_issuer import SandboxIssuer
from crcr.sandbox.reporter_send import httpx_send

ISSUER_URL = "http://actions.test/oidc"
FAST = RetryPolicy(attempts=3, first_delay=0.0, jitter=0.0)


async def no_sleep(seconds: float) -> None:
    return None


@pytest.fixture(scope="module")
def issuer() -> SandboxIssuer:
    return SandboxIssuer(ISSUER_URL)


@pytest.fixture
async def client(issuer: SandboxIssuer) -> AsyncIterator[httpx.AsyncClient]:
    app = Starlette(routes=[Mount("/oidc", routes=issuer.routes())])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as http:
        yield http


def actions_env(issuer: SandboxIssuer, repository: str = "intel/xpu-backend") -> dict[str, str]:
    """What the runner gives a job that has `permissions: id-token: write`."""
    request_token = issuer.issue_request_token(issuer.actions_claims(repository))
    return {
        "ACTIONS_ID_TOKEN_REQUEST_URL": issuer.token_request_url,
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN": request_token,
    }


def verified_claims(issuer: SandboxIssuer, token: str, audience: str) -> dict[str, object]:
    (jwk,) = issuer.jwks()["keys"]
    return jwt.decode(
        token, jwt.PyJWK(jwk).key, algorithms=["RS256"], audience=audience, issuer=ISSUER_URL
    )


def test_the_audience_is_appended_to_the_runners_query_string() -> None:
    url = github_token_url("https://pipelines.example/idtoken?api-version=2.0", "a b/c")
    assert url == "https://pipelines.example/idtoken?api-version=2.0&audience=a%20b%2Fc"
    assert github_token_url("https://x.example/t", "aud") == "https://x.example/t?audience=aud"


async def test_an_actions_token_carries_our_audience_and_the_jobs_repository(
    issuer: SandboxIssuer, client: httpx.AsyncClient
) -> None:
    token = await mint_github_token(actions_env(issuer), DEFAULT_AUDIENCE, send=httpx_send(client))
    claims = verified_claims(issuer, token, DEFAULT_AUDIENCE)
    assert claims["aud"] == "pytorch-cross-repo-ci-relay"
    assert claims["repository"] == "intel/xpu-backend"


async def test_a_custom_audience_is_requested_as_given(
    issuer: SandboxIssuer, client: httpx.AsyncClient
) -> None:
    env = actions_env(issuer)
    token = await mint_token(
        Provider.GITHUB, env, "https://relay.example.org", send=httpx_send(client)
    )
    assert verified_claims(issuer, token, "https://relay.example.org")["aud"] == (
        "https://relay.example.org"
    )


async def test_without_the_request_variables_the_missing_permission_is_named(
    client: httpx.AsyncClient,
) -> None:
    with pytest.raises(TokenError, match="permissions: id-token: write"):
        await mint_github_token({}, DEFAULT_AUDIENCE, send=httpx_send(client))


async def test_a_refused_request_token_fails_at_once_without_echoing_secrets(
    issuer: SandboxIssuer, client: httpx.AsyncClient
) -> None:
    env = actions_env(issuer) | {"ACTIONS_ID_TOKEN_REQUEST_TOKEN": "not-a-real-request-token"}
    with pytest.raises(TokenError) as caught:
        await mint_github_token(
            env, DEFAULT_AUDIENCE, send=httpx_send(client), policy=FAST, sleep=no_sleep
        )
    assert str(caught.value) == "cannot mint the OIDC token: actions.test answered HTTP 401"


async def test_a_flaky_token_service_is_retried() -> None:
    answers = iter([503, 200])
    calls: list[str] = []

    async def token_endpoint(request: Request) -> JSONResponse:
        calls.append(str(request.url))
        status = next(answers)
        if status != 200:
            return JSONResponse({"message": "busy"}, status_code=status)
        return JSONResponse({"value": "header.claims.signature"})

    app = Starlette(routes=[Route("/idtoken", token_endpoint)])
    env = {
        "ACTIONS_ID_TOKEN_REQUEST_URL": "http://runtime.test/idtoken?api-version=2.0",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "request-secret",
    }
    slept: list[float] = []

    async def record_sleep(seconds: float) -> None:
        slept.append(seconds)

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as http:
        token = await mint_github_token(
            env, "aud", send=httpx_send(http), policy=FAST, sleep=record_sleep
        )
    assert token == "header.claims.signature"
    assert calls == ["http://runtime.test/idtoken?api-version=2.0&audience=aud"] * 2
    assert slept == [0.0]


# --- Buildkite: a stand-in `buildkite-agent` on PATH --------------------------------

BUILDKITE_TOKEN = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJidWlsZGtpdGUifQ.c2lnbmF0dXJl"


def install_agent(directory: Path, script: str) -> dict[str, str]:
    """Put an executable `buildkite-agent` in `directory`; return an env finding only it."""
    agent = directory / "buildkite-agent"
    agent.write_text("#!/bin/sh\n" + textwrap.dedent(script))
    agent.chmod(agent.stat().st_mode | stat.S_IXUSR)
    return {"PATH": f"{directory}{os.pathsep}/usr/bin{os.pathsep}/bin", "BUILDKITE": "true"}


async def test_buildkite_asks_the_agent_with_our_audience_and_a_short_lifetime(
    tmp_path: Path,
) -> None:
    env = install_agent(
        tmp_path,
        f"""\
        echo "$@" > "{tmp_path}/args"
        echo "$BUILDKITE_JOB_ID" > "{tmp_path}/job"
        echo {BUILDKITE_TOKEN}
        """,
    )
    env["BUILDKITE_JOB_ID"] = "0190a3c2-8a2b-4c9d-8e0f-1a2b3c4d5e6f"
    token = await mint_buildkite_token(env, DEFAULT_AUDIENCE)
    assert token == BUILDKITE_TOKEN
    args = (tmp_path / "args").read_text().split()
    assert args == [
        "oidc",
        "request-token",
        "--audience",
        "pytorch-cross-repo-ci-relay",
        "--lifetime",
        "300",
        "--claim",
        "organization_id,pipeline_id",
    ]
    assert (tmp_path / "job").read_text().strip() == env["BUILDKITE_JOB_ID"]


async def test_an_agent_too_old_for_the_id_claims_is_told_to_upgrade(tmp_path: Path) -> None:
    env = install_agent(
        tmp_path,
        f"""        echo x >> "{tmp_path}/runs"
        case "$*" in
          *--claim*) echo "flag provided but not defined: -claim" >&2; exit 1 ;;
        esac
        echo {BUILDKITE_TOKEN}
        """,
    )
    with pytest.raises(TokenError, match=r"buildkite-agent is too old .* upgrade it"):
        await mint_buildkite_token(env, DEFAULT_AUDIENCE, policy=FAST, sleep=no_sleep)
    assert (tmp_path / "runs").read_text().count("x") == 1  # not asked again


async def test_a_failing_agent_reports_its_complaint_but_not_its_output(tmp_path: Path) -> None:
    env = install_agent(
        tmp_path,
        f"""\
        echo {BUILDKITE_TOKEN}
        echo "Error: job is not allowed to request OIDC tokens" >&2
        exit 1
        """,
    )
    with pytest.raises(TokenError) as caught:
        await mint_buildkite_token(env, DEFAULT_AUDIENCE, policy=FAST, sleep=no_sleep)
    message = str(caught.value)
    assert message == (
        "cannot mint the OIDC token after 3 attempts: buildkite-agent exited 1: "
        "Error: job is not allowed to request OIDC tokens"
    )
    assert BUILDKITE_TOKEN not in message


async def test_without_an_agent_on_path_the_agent_is_named(tmp_path: Path) -> None:
    with pytest.raises(TokenError, match="buildkite-agent is not on PATH"):
        await mint_buildkite_token({"PATH": str(tmp_path)}, DEFAULT_AUDIENCE)


def has_exited(pid: int) -> bool:
    """True once `pid` is dead (a zombie its parent has not reaped yet counts as dead)."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    state = stat_line.rsplit(")", 1)[1].split()[0]
    return state in {"Z", "X"}


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process state in /proc")
async def test_a_hung_agent_is_killed_with_what_it_started_and_not_asked_again(
    tmp_path: Path,
) -> None:
    # A wrapper script whose child hangs holding the output pipe: killing only the
    # script would leave us waiting on the pipe for as long as the child lives.
    env = install_agent(
        tmp_path,
        f"""\
        echo run >> "{tmp_path}/runs"
        echo $$ > "{tmp_path}/agent.pid"
        sleep 600 &
        echo $! > "{tmp_path}/child.pid"
        wait
        """,
    )
    async with asyncio.timeout(30):  # a regression fails here instead of hanging
        with pytest.raises(TokenError) as caught:
            await mint_buildkite_token(
                env, DEFAULT_AUDIENCE, policy=FAST, sleep=no_sleep, agent_timeout=1.0
            )
    assert str(caught.value) == (
        "buildkite-agent oidc request-token did not finish within 1 s; "
        "it was killed (is the agent able to reach the Buildkite API?)"
    )
    assert (tmp_path / "runs").read_text().splitlines() == ["run"]
    agent_pid = int((tmp_path / "agent.pid").read_text())
    child_pid = int((tmp_path / "child.pid").read_text())
    assert has_exited(agent_pid)
    assert has_exited(child_pid)


async def test_a_token_is_reused_until_it_is_old_then_minted_again() -> None:
    now = [0.0]
    minted: list[str] = []

    async def mint() -> str:
        minted.append(f"token-{len(minted) + 1}")
        return minted[-1]

    tokens = FreshTokens(mint, refresh_after=150.0, clock=lambda: now[0])
    handed_out = []
    for at in (0.0, 100.0, 149.9, 150.0, 299.0, 300.0):
        now[0] = at
        handed_out.append(await tokens())
    assert handed_out == ["token-1", "token-1", "token-1", "token-2", "token-2", "token-3"]
    assert minted == ["token-1", "token-2", "token-3"]

"""A running relay and sandbox on loopback, for the reporter's end-to-end tests.

The sandbox (GitHub API, an Actions OIDC issuer and a Buildkite one) and the relay serve
over loopback from a background thread. A signed webhook makes the relay dispatch; the
job's environment is built from that dispatch; the reporter runs as its own process,
mints its token from the sandbox (through the Actions token endpoint, or a stand-in
`buildkite-agent` on PATH asking a stand-in agent API) and posts to the relay; the HUD's
JSON API shows what landed.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Mount, Route
from tests.reporter.served_apps import served_in_thread

from crcr.app import create_app
from crcr.config.settings import load_settings
from crcr.demo.servers import EmbeddedServer, bind_socket, socket_url
from crcr.sandbox.github_server import create_sandbox_app
from crcr.sandbox.github_state import SandboxGitHub
from crcr.sandbox.oidc_issuer import SandboxIssuer
from crcr.sandbox.webhooks import WebhookDelivery, pull_request_event

UPSTREAM = "pytorch/pytorch"
ACTIONS_REPO = "e2e-org/actions-backend"
BUILDKITE_REPO = "e2e-org/buildkite-backend"
BUILDKITE_ORG = "e2e-buildkite-org"
BUILDKITE_PIPELINE = "npu-ci"
# What Buildkite knows the organisation and pipeline by: UUIDs, immutable, unlike slugs.
BUILDKITE_ORG_ID = "0190a1b2-7c1e-7d3a-9f00-3a1d2e4f5a60"
BUILDKITE_PIPELINE_ID = "0190a1b2-7c1e-7d3a-9f00-5b6c7d8e9f01"
ALLOWLIST = f"""
L2:
  - {ACTIONS_REPO}
  - {BUILDKITE_REPO}
"""
AUDIENCE = "pytorch-cross-repo-ci-relay"
AGENT_STUB = Path(__file__).with_name("buildkite_agent_stub.py")
# Anything shaped like a JWT (base64url header starting `{"`): no output may hold one.
JWT_SHAPE = re.compile(r"eyJ[\w-]+\.[\w-]+\.[\w-]*")
# What the job's own CI would set; the test process may itself run in CI.
CI_VARIABLE_PREFIXES = ("GITHUB_", "RUNNER_", "ACTIONS_", "BUILDKITE", "CRCR_")
CI_VARIABLES = {"CI", "http_proxy", "https_proxy", "all_proxy"}


class RecordingIssuer(SandboxIssuer):
    """A sandbox issuer that keeps every token it signs, to prove none is ever printed."""

    def __init__(self, issuer: str) -> None:
        super().__init__(issuer)
        self.minted: list[str] = []

    def mint(self, claims: Mapping[str, Any], **options: Any) -> str:
        token = super().mint(claims, **options)
        self.minted.append(token)
        return token


class StandInBuildkite(RecordingIssuer):
    """Buildkite's issuer and the agent API route `buildkite-agent oidc request-token` calls.

    Each job's access token is bound to what Buildkite knows of the job. Like Buildkite,
    the route leaves the optional `organization_id` and `pipeline_id` claims out of the
    token unless the request names them.
    """

    OPTIONAL_CLAIMS = ("organization_id", "pipeline_id")

    def __init__(self, issuer: str) -> None:
        super().__init__(issuer)
        self.jobs: dict[str, tuple[str, dict[str, Any]]] = {}

    @property
    def agent_endpoint(self) -> str:
        """The value for `BUILDKITE_AGENT_ENDPOINT`."""
        return f"{self.issuer}/v3"

    def start_job(self, job_id: str, access_token: str, **job: Any) -> None:
        """Accept `access_token` for job `job_id`; `job` takes `buildkite_claims`' arguments."""
        self.jobs[access_token] = (job_id, job)

    async def _oidc_token(self, request: Request) -> JSONResponse:
        scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
        job_id, job = self.jobs.get(credentials, ("", {})) if scheme == "Token" else ("", {})
        if not job or request.path_params["job_id"] != job_id:
            return JSONResponse({"message": "Unauthorized"}, status_code=401)
        body = await request.json()
        asked = body.get("claims") or []
        if not set(asked) <= set(self.OPTIONAL_CLAIMS):
            return JSONResponse({"message": "Invalid claims requested"}, status_code=422)
        left_out = [name for name in self.OPTIONAL_CLAIMS if name not in asked]
        arguments = {name: value for name, value in job.items() if name not in left_out}
        audience = body.get("audience") or "https://buildkite.com"
        token = self.mint(self.buildkite_claims(audience=audience, **arguments))
        return JSONResponse({"token": token})

    def routes(self) -> list[BaseRoute]:
        route = Route("/v3/jobs/{job_id}/oidc/tokens", self._oidc_token, methods=["POST"])
        return [*super().routes(), route]


@dataclass
class Stack:
    """The running relay and sandbox, and what a test needs to drive them."""

    relay_url: str
    secret: str
    github: SandboxGitHub
    actions: RecordingIssuer
    buildkite: StandInBuildkite
    agent_dir: Path
    http: httpx.Client
    request_tokens: list[str] = field(default_factory=list)

    def open_pr(self, number: int, head_sha: str) -> str:
        """Send the signed `pull_request opened` webhook; return its delivery id."""
        payload = pull_request_event("opened", repo=UPSTREAM, number=number, head_sha=head_sha)
        delivery = WebhookDelivery.build("pull_request", payload, self.secret)
        response = self.http.post(
            f"{self.relay_url}/github/webhook", content=delivery.body, headers=delivery.headers
        )
        assert response.status_code == 200, response.text
        assert sorted(response.json()["dispatched"]) == [ACTIONS_REPO, BUILDKITE_REPO]
        return delivery.delivery_id

    def client_payload(self, repo: str, delivery_id: str) -> dict[str, Any]:
        """The `client_payload` of the dispatch the sandbox recorded for `repo`."""
        [dispatch] = [
            d
            for d in self.github.dispatches(repo)
            if d.client_payload["delivery_id"] == delivery_id
        ]
        assert dispatch.event_type == "pull_request"
        return dispatch.client_payload

    def hud(self, path: str) -> Any:
        response = self.http.get(f"{self.relay_url}/api/crcr{path}")
        response.raise_for_status()
        return response.json()

    def job_rows(self, pr_number: int, repo: str) -> list[dict[str, Any]]:
        view = self.hud(f"/pr/{pr_number}")
        rows: list[dict[str, Any]] = [
            job
            for backend in view["backends"]
            if backend["repo"] == repo
            for job in backend["jobs"]
        ]
        return rows

    def bind_request_token(self, issuer: SandboxIssuer, claims: Mapping[str, Any]) -> str:
        """A job credential the token endpoint answers with `claims` (kept to check leaks)."""
        request_token = issuer.issue_request_token(claims)
        self.request_tokens.append(request_token)
        return request_token

    def assert_no_secret_in(self, outputs: list[subprocess.CompletedProcess[str]]) -> None:
        secrets_seen = [*self.actions.minted, *self.buildkite.minted, *self.request_tokens]
        assert self.actions.minted or self.buildkite.minted, "no token was ever minted"
        for result in outputs:
            for stream in (result.stdout, result.stderr):
                assert not JWT_SHAPE.search(stream), stream
                assert not [secret for secret in secrets_seen if secret in stream]


@contextmanager
def running_stack(work: Path) -> Iterator[Stack]:
    """Sandbox and relay (SQLite state and HUD) on loopback, state under `work`."""
    sandbox_socket = bind_socket("127.0.0.1", 0)
    relay_socket = bind_socket("127.0.0.1", 0)
    sandbox_url = socket_url(sandbox_socket)
    github = SandboxGitHub()
    github.install_app(UPSTREAM, ACTIONS_REPO, BUILDKITE_REPO)
    actions = RecordingIssuer(f"{sandbox_url}/actions-oidc")
    buildkite = StandInBuildkite(f"{sandbox_url}/buildkite-oidc")
    (work / "allowlist.yaml").write_text(ALLOWLIST)
    issuers = [
        {"issuer": actions.issuer, "kind": "github"},
        {
            "issuer": buildkite.issuer,
            "kind": "buildkite",
            # Keyed by IDs only (SPEC §2): `crcr report` asks the agent for the optional
            # organization_id/pipeline_id claims, and slugs are anyone's to choose.
            "repo_map": {
                f"{BUILDKITE_ORG_ID}/{BUILDKITE_PIPELINE_ID}": {
                    "repo": BUILDKITE_REPO,
                    "required_claims": {"build_branch": "main"},
                }
            },
        },
    ]
    secret = secrets.token_urlsafe(16)
    settings = load_settings(
        upstream_repo=UPSTREAM,
        webhook_secret=secret,
        github_app_id=str(github.app.app_id),
        github_app_private_key=github.app.private_key_pem,
        github_api_url=sandbox_url,
        allowlist=str(work / "allowlist.yaml"),
        oidc_audience=AUDIENCE,
        oidc_issuers=json.dumps(issuers),  # as CRCR_OIDC_ISSUERS carries it
        redis_url=None,
        data_dir=work / "relay-data",
        database_url=None,
        hud_url=None,
        hud_token=secrets.token_urlsafe(16),
    )
    sandbox_app = create_sandbox_app(
        github,
        extra_routes=[
            Mount("/actions-oidc", routes=actions.routes()),
            Mount("/buildkite-oidc", routes=buildkite.routes()),
        ],
    )
    agent_dir = work / "agent-bin"
    agent_dir.mkdir()
    agent = agent_dir / "buildkite-agent"
    agent.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{AGENT_STUB}" "$@"\n')
    agent.chmod(0o755)
    servers = [
        EmbeddedServer(sandbox_app, sandbox_socket, lifespan="off"),
        EmbeddedServer(create_app(settings, background=False), relay_socket),
    ]
    with served_in_thread(servers), httpx.Client(timeout=30, trust_env=False) as http:
        yield Stack(socket_url(relay_socket), secret, github, actions, buildkite, agent_dir, http)


def job_environment(stack: Stack, work: Path, variables: Mapping[str, str]) -> dict[str, str]:
    """The test's environment without CI-specific variables, plus the job's own."""
    inherited = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(CI_VARIABLE_PREFIXES) and name.lower() not in CI_VARIABLES
    }
    state = work / "job-state"
    state.mkdir(exist_ok=True)
    return {
        **inherited,
        "CI": "true",
        "CRCR_CALLBACK_URL": f"{stack.relay_url}/github/callback",
        "CRCR_STATE_DIR": str(state),
        **variables,
    }


def actions_job(
    stack: Stack, work: Path, *, event_name: str, event: Mapping[str, Any], run_id: str
) -> dict[str, str]:
    """The environment of a GitHub Actions job with `id-token: write` in `ACTIONS_REPO`."""
    event_path = work / "event.json"
    event_path.write_text(json.dumps(event))
    runner_temp = work / "runner-temp"
    runner_temp.mkdir(exist_ok=True)
    claims = stack.actions.actions_claims(ACTIONS_REPO, run_id=run_id)
    return job_environment(
        stack,
        work,
        {
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": event_name,
            "GITHUB_EVENT_PATH": str(event_path),
            "GITHUB_WORKFLOW": "actions-backend CI",
            "GITHUB_REPOSITORY": ACTIONS_REPO,
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_RUN_ID": run_id,
            "GITHUB_RUN_ATTEMPT": "1",
            "GITHUB_JOB": "test",
            "RUNNER_TEMP": str(runner_temp),
            "ACTIONS_ID_TOKEN_REQUEST_URL": stack.actions.token_request_url,
            "ACTIONS_ID_TOKEN_REQUEST_TOKEN": stack.bind_request_token(stack.actions, claims),
        },
    )


def buildkite_job(
    stack: Stack,
    work: Path,
    client_payload: Mapping[str, Any],
    *,
    build_branch: str,
    old_agent: bool = False,
) -> dict[str, str]:
    """The environment of a Buildkite job started from a relay dispatch.

    `old_agent` puts an agent too old to know `--claim` on PATH.
    """
    job_id, access_token = str(uuid.uuid4()), secrets.token_urlsafe(32)
    stack.request_tokens.append(access_token)
    stack.buildkite.start_job(
        job_id,
        access_token,
        organization_slug=BUILDKITE_ORG,
        pipeline_slug=BUILDKITE_PIPELINE,
        organization_id=BUILDKITE_ORG_ID,
        pipeline_id=BUILDKITE_PIPELINE_ID,
        build_branch=build_branch,
    )
    return job_environment(
        stack,
        work,
        {
            "PATH": f"{stack.agent_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "BUILDKITE": "true",
            "BUILDKITE_PIPELINE_SLUG": BUILDKITE_PIPELINE,
            "BUILDKITE_LABEL": ":pytorch: test npu",
            "BUILDKITE_BUILD_URL": f"https://buildkite.com/{BUILDKITE_ORG}/npu-ci/builds/77",
            "BUILDKITE_BUILD_ID": str(uuid.uuid4()),
            "BUILDKITE_JOB_ID": job_id,
            "BUILDKITE_RETRY_COUNT": "0",
            "BUILDKITE_BRANCH": build_branch,
            "BUILDKITE_AGENT_ENDPOINT": stack.buildkite.agent_endpoint,
            "BUILDKITE_AGENT_ACCESS_TOKEN": access_token,
            "STUB_AGENT_WITHOUT_CLAIM_FLAG": "1" if old_agent else "0",
            "CRCR_DISPATCH_PAYLOAD": json.dumps(client_payload),
        },
    )

"""Playing both sides by hand: `crcr sandbox token|webhook|dispatches` against a live sandbox."""

from __future__ import annotations

import json
import shlex
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from typer.testing import CliRunner

from crcr import cli as crcr_cli
from crcr.relay.webhook.signature import verify_signature
from crcr.sandbox.by_hand_webhooks import KINDS, WebhookKindError, actions_env, webhook_for
from crcr.sandbox.github_model import Dispatch
from crcr.sandbox.serve import SandboxServer, bind, build_server

SECRET = "by-hand-secret"


class Served:
    """An ASGI app served by uvicorn in a thread, on a socket listening before it starts."""

    def __init__(self, app: Any, sock: Any) -> None:
        sock.listen(64)  # connections queue in the kernel until uvicorn accepts them
        self.server = uvicorn.Server(
            uvicorn.Config(app, log_config=None, log_level="warning", lifespan="off")
        )
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [sock]}, daemon=True
        )
        self.sock = sock

    def __enter__(self) -> Served:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[SandboxServer]:
    server = build_server("127.0.0.1", 0, tmp_path / "app.pem", installed_repos=["acme/gate"])
    with Served(server.app, server.sock):
        yield server


@pytest.fixture
def relay() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A stand-in relay webhook endpoint that keeps what it was sent."""
    received: list[dict[str, Any]] = []

    async def webhook(request: Request) -> JSONResponse:
        received.append({"headers": dict(request.headers), "body": await request.body()})
        return JSONResponse({"ok": True, "dispatched": ["acme/gate"]})

    sock = bind("127.0.0.1", 0)
    host, port = sock.getsockname()[:2]
    with Served(Starlette(routes=[Route("/github/webhook", webhook, methods=["POST"])]), sock):
        yield f"http://{host}:{port}", received


def crcr(*args: str) -> Any:
    crcr_cli._register_component_commands()
    return CliRunner().invoke(crcr_cli.app, list(args), env={"CRCR_WEBHOOK_SECRET": SECRET})


def test_a_token_is_signed_by_the_sandbox_for_the_repo_and_run(sandbox: SandboxServer) -> None:
    done = crcr("sandbox", "token", "acme/gate", "--run-id", "42", "--sandbox", sandbox.base_url)
    assert done.exit_code == 0, done.output
    token = done.stdout.strip()

    key = jwt.PyJWKClient(f"{sandbox.issuer_url}/.well-known/jwks").get_signing_key_from_jwt(token)
    claims = jwt.decode(
        token, key.key, algorithms=["RS256"], audience="pytorch-cross-repo-ci-relay"
    )
    assert claims["repository"] == "acme/gate"
    assert claims["run_id"] == "42"
    assert claims["iss"] == sandbox.issuer_url


def test_the_env_form_gives_what_crcr_report_reads(sandbox: SandboxServer) -> None:
    payload = {"event_type": "pull_request", "delivery_id": "d-1", "payload": {"number": 3}}
    sandbox.github.record_dispatch(Dispatch("acme/gate", "pull_request", payload, 0.0))

    done = crcr(
        "sandbox", "token", "acme/gate", "--run-id", "7", "--env", "--sandbox", sandbox.base_url
    )
    assert done.exit_code == 0, done.output
    exported = dict(word.split("=", 1) for word in shlex.split(done.stdout) if word != "export")

    assert exported["GITHUB_RUN_ID"] == "7"
    assert exported["ACTIONS_ID_TOKEN_REQUEST_URL"].startswith(sandbox.issuer_url)
    assert json.loads(exported["CRCR_DISPATCH_PAYLOAD"]) == payload


def test_no_sandbox_is_one_line_and_exit_1() -> None:
    sock = bind("127.0.0.1", 0)  # bound, never listening: nothing answers there
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    try:
        done = crcr("sandbox", "token", "acme/gate", "--sandbox", url)
    finally:
        sock.close()

    assert done.exit_code == 1
    assert "no sandbox at" in done.output and "crcr sandbox" in done.output


@pytest.mark.parametrize("kind", ["pr-opened", "pr-synchronize", "push"])
def test_a_webhook_is_signed_with_the_relay_secret(
    kind: str, sandbox: SandboxServer, relay: tuple[str, list[dict[str, Any]]]
) -> None:
    url, received = relay
    done = crcr(
        "sandbox", "webhook", kind, "--number", "5", "--relay", url, "--sandbox", sandbox.base_url
    )

    assert done.exit_code == 0, done.output
    [delivery] = received
    headers = delivery["headers"]
    verify_signature(SECRET.encode(), delivery["body"], headers["x-hub-signature-256"])
    assert headers["x-github-event"] == ("push" if kind == "push" else "pull_request")
    assert "relay answered 200" in done.stdout


def test_a_label_goes_on_the_head_the_sandbox_knows(
    sandbox: SandboxServer, relay: tuple[str, list[dict[str, Any]]]
) -> None:
    url, received = relay
    where = ("--relay", url, "--sandbox", sandbox.base_url, "--number", "6")
    crcr("sandbox", "webhook", "pr-opened", "--sha", "a" * 40, *where)

    done = crcr("sandbox", "webhook", "label", "--label", "ciflow/crcr/gate", *where)

    assert done.exit_code == 0, done.output
    labelled = json.loads(received[-1]["body"])
    assert labelled["action"] == "labeled"
    assert labelled["pull_request"]["head"]["sha"] == "a" * 40
    [pull] = sandbox.github.pulls("pytorch/pytorch")
    assert [label["name"] for label in pull["labels"]] == ["ciflow/crcr/gate"]


def test_a_refused_webhook_exits_1() -> None:
    done = crcr("sandbox", "webhook", "label", "--sha", "b" * 40)
    assert done.exit_code == 1
    assert "label needs --label" in done.output


def test_each_kind_builds_its_event() -> None:
    events = {kind: webhook_for(kind, repo="o/r", label="l", number=2) for kind in KINDS}

    assert events["push"].payload["ref"] == "refs/heads/main"
    assert events["pr-opened"].payload["action"] == "opened"
    assert events["pr-synchronize"].payload["action"] == "synchronize"
    assert events["label"].payload["label"]["name"] == "l"
    assert events["pr-opened"].head_sha != events["pr-synchronize"].head_sha
    with pytest.raises(WebhookKindError):
        webhook_for("pr-closed", repo="o/r")


def test_the_actions_env_leaves_out_a_payload_it_does_not_have() -> None:
    env = actions_env("o/r", "1", "2", "http://x/token", "t", None)
    assert env["GITHUB_RUN_ATTEMPT"] == "2" and "CRCR_DISPATCH_PAYLOAD" not in env

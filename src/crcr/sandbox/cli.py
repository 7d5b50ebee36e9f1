"""`crcr sandbox`: run the GitHub stand-in, and play both sides of the loop by hand.

`crcr sandbox` serves; `crcr sandbox token` and `crcr sandbox webhook` talk to a running
sandbox and relay, so a person can send upstream events and callbacks without writing
code (the "try it by hand" guide, docs/try-it-by-hand.md).
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import typer

SANDBOX_URL = "http://127.0.0.1:9000"
_OWNER_REPO = re.compile(r"[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}")
RELAY_URL = "http://127.0.0.1:8000"

sandbox_app = typer.Typer(
    help="The offline GitHub stand-in: serve it, mint callback tokens, send webhooks.",
    invoke_without_command=True,
)


@sandbox_app.callback()
def sandbox(
    ctx: typer.Context,
    host: str = typer.Option("127.0.0.1", help="Interface to bind."),
    port: int = typer.Option(9000, help="TCP port to listen on (0: any free port)."),
    key_file: str = typer.Option(
        "./crcr-data/sandbox-app-key.pem",
        help="Where to write the generated App private key (PEM).",
    ),
    install: list[str] = typer.Option(  # noqa: B008
        [], help="Install the App on this owner/repo (repeatable)."
    ),
    api_prefix: str = typer.Option(
        "", help="Serve the REST API under a prefix, e.g. /api/v3 like GitHub Enterprise."
    ),
    canary: str = typer.Option(
        "",
        "--canary",
        help="Play this owner/repo as the relay's canary (CRCR_CANARY_REPO): it answers every"
        " dispatch, crcr_probe included, with probe jobs that report to --callback-url.",
    ),
    callback_url: str = typer.Option(
        "http://127.0.0.1:8000/github/callback",
        "--callback-url",
        help="With --canary: the relay's /github/callback URL its probe jobs report to.",
    ),
) -> None:
    """Run the offline GitHub stand-in (REST subset, OIDC issuer, PR pages) until Ctrl-C."""
    if ctx.invoked_subcommand is not None:
        return
    from crcr.sandbox.serve import build_server, serve, serve_with_canary

    try:
        if canary and not _OWNER_REPO.fullmatch(canary):
            raise ValueError(f"--canary must be OWNER/REPO, got {canary!r}")
        if canary and not callback_url.startswith(("http://", "https://")):
            raise ValueError(f"--callback-url must be an http(s) URL, got {callback_url!r}")
        server = build_server(
            host, port, Path(key_file), installed_repos=install, api_prefix=api_prefix
        )
    except (OSError, ValueError) as exc:
        typer.echo(f"crcr sandbox: {exc}", err=True)
        raise typer.Exit(2) from None
    for line in server.banner():
        typer.echo(line)
    if canary:
        typer.echo(f"canary: {canary} answers every dispatch; its jobs report to {callback_url}")
        typer.echo(f"CRCR_CANARY_REPO={canary}")
        serve_with_canary(server, canary, callback_url)
    else:
        serve(server)


def _fail(message: str) -> typer.Exit:
    typer.echo(f"crcr sandbox: {message}", err=True)
    return typer.Exit(1)


@sandbox_app.command()
def token(
    repo: str = typer.Argument(..., help="The downstream repository the token is for."),
    run_id: str = typer.Option("1", "--run-id", help="The workflow run the token claims."),
    run_attempt: str = typer.Option("1", "--run-attempt", help="Its attempt."),
    audience: str = typer.Option(
        "pytorch-cross-repo-ci-relay",
        envvar="CRCR_OIDC_AUDIENCE",
        help="The `aud` claim (the relay's CRCR_OIDC_AUDIENCE).",
    ),
    as_env: bool = typer.Option(
        False,
        "--env",
        help="Print `export` lines instead: the variables a GitHub Actions job has "
        "(token service, run, repository, the last dispatch's payload), for `crcr report`.",
    ),
    sandbox_url: str = typer.Option(SANDBOX_URL, "--sandbox", help="The running sandbox."),
) -> None:
    """Print a GitHub-Actions-style OIDC token for REPO, signed by the running sandbox."""
    sandbox = sandbox_url.rstrip("/")
    body = {
        "repository": repo,
        "run_id": run_id,
        "run_attempt": run_attempt,
        "audience": audience,
        "request_token": as_env,
    }
    answer = _ask(sandbox, "POST", "/_sandbox/token", body)
    if not as_env:
        typer.echo(answer["token"])
        return
    from crcr.sandbox.by_hand_webhooks import actions_env

    sent = _ask(sandbox, "GET", f"/_sandbox/dispatches/{repo}")
    payload = sent[-1]["client_payload"] if sent else None
    variables = actions_env(
        repo, run_id, run_attempt, answer["request_url"], answer["request_token"], payload
    )
    for name, value in variables.items():
        typer.echo(f"export {name}={shlex.quote(value)}")


def _ask(sandbox: str, method: str, path: str, body: object = None) -> Any:
    """One request to the running sandbox's `/_sandbox` routes; exit 1 with why if it fails."""
    import httpx

    try:
        answer = httpx.request(method, f"{sandbox}{path}", json=body, timeout=10)
    except httpx.HTTPError as exc:
        raise _fail(f"no sandbox at {sandbox} ({exc}); start one with `crcr sandbox`") from None
    if answer.status_code >= 300:
        raise _fail(f"the sandbox answered {answer.status_code}: {answer.text}")
    return answer.json()


@sandbox_app.command()
def webhook(
    kind: str = typer.Argument(..., help="pr-opened, pr-synchronize, push or label."),
    secret: str = typer.Option(
        ..., envvar="CRCR_WEBHOOK_SECRET", help="The relay's webhook secret (signs the body)."
    ),
    repo: str = typer.Option(
        "pytorch/pytorch", envvar="CRCR_UPSTREAM_REPO", help="The upstream repository."
    ),
    number: int = typer.Option(1, "--number", help="The pull request's number."),
    sha: str | None = typer.Option(
        None, "--sha", help="Head commit (default: a new one; for label, the PR's head)."
    ),
    label: str | None = typer.Option(None, "--label", help="For label: the label added."),
    branch: str = typer.Option("main", "--branch", help="For push: the branch pushed to."),
    relay_url: str = typer.Option(RELAY_URL, "--relay", help="The relay to send it to."),
    sandbox_url: str = typer.Option(
        SANDBOX_URL, "--sandbox", help="The sandbox to tell about the PR (its PR page)."
    ),
) -> None:
    """Send the relay a signed upstream webhook, as GitHub would; print its answer."""
    import httpx

    from crcr.sandbox.by_hand_webhooks import WebhookKindError, webhook_for
    from crcr.sandbox.webhooks import WebhookDelivery

    sandbox = sandbox_url.rstrip("/")
    if kind == "label" and sha is None:
        sha = _pull_head(sandbox, repo, number)
    try:
        built = webhook_for(kind, repo=repo, number=number, sha=sha, label=label, branch=branch)
    except WebhookKindError as exc:
        raise _fail(str(exc)) from None
    if built.event == "pull_request":
        _tell_sandbox(sandbox, built.payload["pull_request"], label)
    delivery = WebhookDelivery.build(built.event, built.payload, secret)
    url = f"{relay_url.rstrip('/')}/github/webhook"
    try:
        answer = httpx.post(url, content=delivery.body, headers=dict(delivery.headers), timeout=30)
    except httpx.HTTPError as exc:
        raise _fail(f"no relay at {url} ({exc}); start one with `crcr serve`") from None
    typer.echo(f"sent {built.summary}, delivery {delivery.delivery_id}")
    typer.echo(f"relay answered {answer.status_code}: {answer.text}")
    if built.event == "pull_request":
        typer.echo(f"the PR in the sandbox: {sandbox}/web/{repo}/pull/{number}")
    if answer.status_code >= 300:
        raise typer.Exit(1)


def _pull_head(sandbox: str, repo: str, number: int) -> str:
    """The head commit the sandbox knows for a PR (labelling does not move it)."""
    import httpx

    try:
        answer = httpx.get(f"{sandbox}/_sandbox/pulls/{repo}/{number}", timeout=10)
    except httpx.HTTPError:
        raise _fail(
            f"no sandbox at {sandbox} to ask for the head of #{number}; pass --sha"
        ) from None
    if answer.status_code != 200:
        raise _fail(
            f"{repo}#{number} is not open in the sandbox; send pr-opened first or pass --sha"
        )
    head: str = answer.json()["head_sha"]
    return head


def _tell_sandbox(sandbox: str, pull: dict[str, Any], label: str | None) -> None:
    """Record the PR in the sandbox, so that its page shows it; optional, hence a note."""
    import httpx

    body = {
        "repository": pull["base"]["repo"]["full_name"],
        "number": pull["number"],
        "head_sha": pull["head"]["sha"],
        "title": pull["title"],
        "labels": [label] if label else [],
    }
    try:
        httpx.post(f"{sandbox}/_sandbox/pulls", json=body, timeout=10).raise_for_status()
    except httpx.HTTPError as exc:
        typer.echo(f"note: the sandbox at {sandbox} was not told about the PR ({exc})", err=True)


@sandbox_app.command()
def dispatches(
    repo: str = typer.Argument(..., help="The downstream repository."),
    sandbox_url: str = typer.Option(SANDBOX_URL, "--sandbox", help="The running sandbox."),
) -> None:
    """Print the dispatches the relay sent REPO, oldest first, as JSON."""
    typer.echo(
        json.dumps(_ask(sandbox_url.rstrip("/"), "GET", f"/_sandbox/dispatches/{repo}"), indent=2)
    )


def register(app: typer.Typer) -> None:
    """Add `crcr sandbox …` to the CLI."""
    app.add_typer(sandbox_app, name="sandbox")

"""What a person playing downstream CI by hand asks the sandbox: tokens, dispatches, PRs.

The issuer's signing key lives only in the sandbox process, so `crcr sandbox token`
asks the running sandbox to mint (`POST /_sandbox/token`) rather than signing itself.
`/_sandbox/dispatches/OWNER/REPO` hands back the `client_payload`s the relay sent, which
a callback must echo, and `POST /_sandbox/pulls` tells the sandbox about a pull request
whose webhook was sent by hand, so that its PR view (`crcr.sandbox.pr_view`) can show it.
These routes exist only in the sandbox: it is a development tool with no credentials.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from crcr.sandbox.github_state import SandboxGitHub

if TYPE_CHECKING:  # the issuer is optional (crcr.sandbox.serve): not imported to run
    from crcr.sandbox.oidc_issuer import SandboxIssuer

DEFAULT_AUDIENCE = "pytorch-cross-repo-ci-relay"
PREFIX = "/_sandbox"


def _refuse(message: str, status: int = 422) -> JSONResponse:
    return JSONResponse({"message": message}, status_code=status)


def _string(body: dict[str, Any], name: str, default: str | None = None) -> str | None:
    value = body.get(name, default)
    if value is None:
        return None
    return str(value)


async def _json_object(request: Request) -> dict[str, Any] | None:
    try:
        body = await request.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def by_hand_routes(
    github: SandboxGitHub, issuer: Callable[[], SandboxIssuer | None]
) -> list[BaseRoute]:
    """The `/_sandbox/*` routes over this sandbox's state and (when installed) its issuer."""

    async def mint(request: Request) -> JSONResponse:
        body = await _json_object(request)
        signer = issuer()
        if signer is None:
            return _refuse("this sandbox has no OIDC issuer", 404)
        repository = None if body is None else _string(body, "repository")
        if body is None or not repository or repository.count("/") != 1:
            return _refuse(
                'send {"repository": "OWNER/REPO"} (run_id, run_attempt, audience optional)'
            )
        audience = _string(body, "audience", DEFAULT_AUDIENCE)
        run_id = _string(body, "run_id", "1") or "1"
        run_attempt = _string(body, "run_attempt", "1") or "1"
        if body.get("request_token"):
            # What a runner's job gets: a bearer token for the token service, so the
            # real reporter (`crcr report`) mints its own tokens as on GitHub Actions.
            claims = signer.actions_claims(repository, run_id=run_id, run_attempt=run_attempt)
            return JSONResponse(
                {
                    "request_url": signer.token_request_url,
                    "request_token": signer.issue_request_token(claims),
                }
            )
        token = signer.mint_actions_token(
            repository, audience=audience, run_id=run_id, run_attempt=run_attempt
        )
        return JSONResponse({"token": token, "issuer": signer.issuer})

    async def dispatches(request: Request) -> JSONResponse:
        repo = f"{request.path_params['owner']}/{request.path_params['repo']}"
        sent = [
            {"event_type": d.event_type, "client_payload": d.client_payload, "at": d.timestamp}
            for d in github.dispatches(repo)
        ]
        return JSONResponse(sent)

    async def record_pull(request: Request) -> JSONResponse:
        body = await _json_object(request)
        if body is None:
            return _refuse("send a JSON object")
        repository, number, head_sha = (
            body.get("repository"),
            body.get("number"),
            body.get("head_sha"),
        )
        if (
            not isinstance(repository, str)
            or not isinstance(number, int)
            or not isinstance(head_sha, str)
        ):
            return _refuse('send {"repository": "OWNER/REPO", "number": N, "head_sha": SHA}')
        labels = tuple(str(name) for name in body.get("labels", ()))
        github.record_pull_head(
            repository, number, head_sha=head_sha, labels=labels, title=str(body.get("title", ""))
        )
        return JSONResponse({"recorded": f"{repository}#{number}"}, status_code=201)

    async def pull_head(request: Request) -> JSONResponse:
        params = request.path_params
        repo = f"{params['owner']}/{params['repo']}"
        pulls = github.pulls(repo) if github.has_repo(repo) else []
        pull = next((p for p in pulls if p["number"] == params["number"]), None)
        if pull is None:
            return _refuse(f"the sandbox has not seen {repo}#{params['number']}", 404)
        return JSONResponse(
            {"head_sha": pull["head_sha"], "labels": [label["name"] for label in pull["labels"]]}
        )

    return [
        Route(f"{PREFIX}/token", mint, methods=["POST"]),
        Route(f"{PREFIX}/pulls/{{owner}}/{{repo}}/{{number:int}}", pull_head),
        Route(f"{PREFIX}/dispatches/{{owner}}/{{repo}}", dispatches),
        Route(f"{PREFIX}/pulls", record_pull, methods=["POST"]),
    ]

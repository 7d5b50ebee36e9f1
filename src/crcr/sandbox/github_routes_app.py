"""Sandbox GitHub routes that authenticate as the App: installations and their tokens."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from crcr.sandbox.github_http import answer, api_base, full_name, json_body, require_app
from crcr.sandbox.github_model import Installation, iso
from crcr.sandbox.github_state import SandboxGitHub
from crcr.sandbox.webhooks.objects import user

PERMISSIONS = {
    "actions": "write",
    "checks": "write",
    "contents": "read",
    "issues": "write",
    "metadata": "read",
    "pull_requests": "write",
}


def _installation_json(
    github: SandboxGitHub, installation: Installation, base: str
) -> dict[str, Any]:
    created = iso(github.clock())
    return {
        "id": installation.id,
        "account": user(installation.account, kind="Organization"),
        "target_id": user(installation.account)["id"],
        "created_at": created,
        "updated_at": created,
        "single_file_name": None,
        "has_multiple_single_files": False,
        "single_file_paths": [],
        "suspended_by": None,
        "suspended_at": None,
        "app_id": github.app.app_id,
        "app_slug": github.app.slug,
        "target_type": "Organization",
        "repository_selection": "selected",
        "permissions": PERMISSIONS,
        "events": ["pull_request", "push", "check_run", "check_suite"],
        "access_tokens_url": f"{base}/app/installations/{installation.id}/access_tokens",
        "repositories_url": f"{base}/installation/repositories",
        "html_url": f"https://github.com/organizations/{installation.account}/settings/installations/{installation.id}",
    }


async def get_app(request: Request) -> Response:
    """`GET /app`: the authenticated App."""
    github = require_app(request)
    slug = github.app.slug
    return answer(
        {
            "id": github.app.app_id,
            "node_id": f"A_{github.app.app_id}",
            "slug": slug,
            "name": slug,
            "owner": user("sandbox-org", kind="Organization"),
            "description": "The sandbox's stand-in for the relay's GitHub App.",
            "external_url": "https://github.com",
            "html_url": f"https://github.com/apps/{slug}",
            "created_at": "2026-01-01T00:00:00Z",
            "updated_at": "2026-01-01T00:00:00Z",
            "permissions": PERMISSIONS,
            "events": ["check_run", "check_suite", "pull_request", "push"],
        }
    )


async def list_installations(request: Request) -> Response:
    """`GET /app/installations`."""
    github = require_app(request)
    base = api_base(request)
    return answer([_installation_json(github, i, base) for i in github.installations()])


async def repo_installation(request: Request) -> Response:
    """`GET /repos/{owner}/{repo}/installation`: 404 when the App is not installed there."""
    github = require_app(request)
    installation = github.installation_of_repo(full_name(request))
    return answer(_installation_json(github, installation, api_base(request)))


async def create_access_token(request: Request) -> Response:
    """`POST /app/installations/{id}/access_tokens`: a token valid for one hour."""
    github = require_app(request)
    await json_body(request)
    token, expires_at = github.issue_token(request.path_params["installation_id"])
    return answer(
        {
            "token": token,
            "expires_at": iso(expires_at),
            "permissions": PERMISSIONS,
            "repository_selection": "selected",
        },
        status=201,
    )


ROUTES = [
    Route("/app", get_app, methods=["GET"]),
    Route("/app/installations", list_installations, methods=["GET"]),
    Route("/repos/{owner}/{repo}/installation", repo_installation, methods=["GET"]),
    Route(
        "/app/installations/{installation_id:int}/access_tokens",
        create_access_token,
        methods=["POST"],
    ),
]

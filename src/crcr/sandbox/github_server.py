"""`create_sandbox_app`: the sandbox GitHub REST API as one ASGI app (plus extra mounts)."""

from __future__ import annotations

from collections.abc import Sequence

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount

from crcr.sandbox import (
    github_pull_files,
    github_routes_app,
    github_routes_checks,
    github_routes_compare,
    github_routes_git,
    github_routes_issues,
    github_routes_pulls,
    github_routes_repos,
)
from crcr.sandbox.github_model import DOCS_URL, ApiError
from crcr.sandbox.github_state import SandboxGitHub
from crcr.sandbox.github_traffic import TrafficMiddleware


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    body = {"message": exc.detail, "documentation_url": DOCS_URL, "status": str(exc.status_code)}
    return JSONResponse(body, status_code=exc.status_code)


def create_github_api(github: SandboxGitHub) -> Starlette:
    """The REST subset alone, with call logging and fault injection around it."""
    api = Starlette(
        # Starlette tries routes in order, and dispatches are most of the calls a relay
        # makes (one per downstream per event): their module comes first. It shares no
        # path with the two it moved ahead of, so no call is answered differently.
        routes=[
            *github_routes_repos.ROUTES,
            *github_routes_app.ROUTES,
            *github_routes_checks.ROUTES,
            *github_routes_git.ROUTES,
            *github_routes_pulls.ROUTES,
            *github_routes_compare.ROUTES,
            *github_routes_issues.ROUTES,
            *github_pull_files.ROUTES,
        ],
        middleware=[Middleware(TrafficMiddleware, github=github)],
        exception_handlers={ApiError: _api_error, HTTPException: _http_error},
    )
    api.state.github = github
    return api


def create_sandbox_app(
    github: SandboxGitHub,
    *,
    extra_routes: Sequence[BaseRoute] = (),
    api_prefix: str = "",
) -> Starlette:
    """The whole sandbox server: `extra_routes` (e.g. the OIDC issuer under `/oidc`) first,
    then the GitHub API at the root, or under `api_prefix` such as `/api/v3` to stand in
    for GitHub Enterprise Server.
    """
    if api_prefix and (not api_prefix.startswith("/") or api_prefix.endswith("/")):
        raise ValueError(f"api_prefix must start with / and not end with one: {api_prefix!r}")
    app = Starlette(routes=[*extra_routes, Mount(api_prefix, app=create_github_api(github))])
    app.state.github = github
    return app

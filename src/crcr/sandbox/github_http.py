"""HTTP plumbing shared by the sandbox GitHub routes: JSON bodies, pagination, auth."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from crcr.sandbox.github_auth import credential
from crcr.sandbox.github_model import ApiError, Repo, json_document
from crcr.sandbox.github_state import SandboxGitHub

T = TypeVar("T")

COMMON_HEADERS = {
    "x-github-api-version-selected": "2022-11-28",
    "x-ratelimit-limit": "5000",
    "x-ratelimit-remaining": "4999",
    "x-ratelimit-resource": "core",
}


def github_of(request: Request) -> SandboxGitHub:
    """The sandbox state the app was built around."""
    github: SandboxGitHub = request.app.state.github
    return github


def api_base(request: Request) -> str:
    """The URL clients reach the API at (including any Enterprise-style prefix)."""
    prefix = request.scope.get("crcr.api_prefix", "")
    return f"{request.url.scheme}://{request.url.netloc}{prefix}"


WEB_PATH = "/web"
"""Where the sandbox serves its stand-ins for github.com's pages (`crcr.sandbox.pr_view`)."""


def web_base(request: Request) -> str:
    """The sandbox's github.com: pages a person opens, served by the sandbox itself."""
    return f"{request.url.scheme}://{request.url.netloc}{WEB_PATH}"


def answer(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """A JSON answer with GitHub's usual headers."""
    return JSONResponse(data, status_code=status, headers={**COMMON_HEADERS, **(headers or {})})


def no_content(status: int = 204) -> Response:
    """An empty answer (dispatches answer 204)."""
    return Response(status_code=status, headers=COMMON_HEADERS)


async def json_body(request: Request) -> dict[str, Any]:
    """The request's JSON object; 400 like GitHub when it does not parse."""
    raw = await request.body()
    try:
        data = json_document(raw or b"{}")
    except ValueError:
        raise ApiError(400, "Problems parsing JSON") from None
    if not isinstance(data, dict):
        raise ApiError(400, "Body should be a JSON object")
    return data


def full_name(request: Request) -> str:
    """`owner/repo` from the path."""
    return f"{request.path_params['owner']}/{request.path_params['repo']}"


def authorised_repo(request: Request) -> Repo:
    """The path's repository, if the request carries an installation token that covers it."""
    scheme, token = credential(request)
    if scheme not in ("token", "bearer") or not token.startswith("ghs_"):
        raise ApiError(401, "Bad credentials")
    return github_of(request).repo_for_token(token, full_name(request))


def require_app(request: Request) -> SandboxGitHub:
    """Accept only a valid App JWT (the App-level routes)."""
    scheme, token = credential(request)
    if scheme != "bearer":
        raise ApiError(401, "A JSON web token could not be decoded")
    github = github_of(request)
    github.verify_app(token)
    return github


def paginate(request: Request, items: Sequence[T]) -> tuple[list[T], dict[str, str]]:
    """One page of `items` per GitHub's `per_page`/`page`, with a `Link` header when more."""
    try:
        per_page = min(max(int(request.query_params.get("per_page", "30")), 1), 100)
        page = max(int(request.query_params.get("page", "1")), 1)
    except ValueError:
        raise ApiError(422, "Invalid request.\n\nper_page and page must be integers.") from None
    chunk = list(items[(page - 1) * per_page : page * per_page])
    headers: dict[str, str] = {}
    if page * per_page < len(items):
        params = dict(request.query_params)
        params.update(per_page=str(per_page), page=str(page + 1))
        url = f"{api_base(request)}{request.scope['crcr.api_path']}?{urlencode(params)}"
        headers["link"] = f'<{url}>; rel="next"'
    return chunk, headers

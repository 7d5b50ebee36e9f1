"""Sandbox GitHub routes for pull requests and issue labels.

`GET /pulls` (filters `state`, `head` as `owner:branch`, `base`; paginated), `POST
/pulls` (201; 422 when a branch is missing or an open one exists for the same head and
base), `GET` and `PATCH /pulls/{n}` (title, body, state), and `POST
/issues/{n}/labels` (200 with every label of the issue), as GitHub documents them.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from crcr.sandbox.github_git import head_of
from crcr.sandbox.github_http import (
    answer,
    api_base,
    authorised_repo,
    github_of,
    json_body,
    paginate,
    web_base,
)
from crcr.sandbox.github_model import ApiError, Repo
from crcr.sandbox.github_pulls import label_json, pull_json


def _validation_failed(message: str) -> ApiError:
    return ApiError(422, f"Validation Failed: {message}")


def _pull(repo: Repo, number: int) -> dict[str, Any]:
    pull = repo.pulls.get(number)
    if pull is None:
        raise ApiError(404, "Not Found")
    return pull


async def list_pulls(request: Request) -> Response:
    """`GET /repos/{o}/{r}/pulls`: newest first, as GitHub sorts by default."""
    repo = authorised_repo(request)
    github = github_of(request)
    query = request.query_params
    state = query.get("state", "open")
    if state not in ("open", "closed", "all"):
        raise _validation_failed("state must be open, closed or all")
    head, base_branch = query.get("head"), query.get("base")
    with github.lock:
        chosen = [
            pull
            for pull in sorted(repo.pulls.values(), key=lambda p: -p["number"])
            if state in ("all", pull["state"])
            and (head is None or head.lower() == f"{repo.owner}:{pull['head']}".lower())
            and (base_branch is None or base_branch == pull["base"])
        ]
        page, headers = paginate(request, chosen)
        now, base = github.clock(), api_base(request)
        items = [pull_json(repo, pull, base, now, web=web_base(request)) for pull in page]
    return answer(items, headers=headers)


async def create_pull(request: Request) -> Response:
    """`POST /repos/{o}/{r}/pulls` with `head`, `base`, `title`, `body`: 201."""
    repo = authorised_repo(request)
    body = await json_body(request)
    head, base_branch, title = body.get("head"), body.get("base"), body.get("title")
    if not isinstance(head, str) or not isinstance(base_branch, str):
        raise _validation_failed('"head" and "base" are required')
    if not isinstance(title, str) or not title:
        raise _validation_failed("title is missing")
    branch = head.split(":", 1)[1] if ":" in head else head
    github = github_of(request)
    with github.lock:
        now = github.clock()
        if head_of(repo, branch, now) is None or head_of(repo, base_branch, now) is None:
            raise _validation_failed("head or base is not a branch of this repository")
        for pull in repo.pulls.values():
            if pull["state"] == "open" and (pull["head"], pull["base"]) == (branch, base_branch):
                raise _validation_failed(
                    f"A pull request already exists for {repo.owner}:{branch}."
                )
        repo.last_number += 1
        pull = {
            "id": github.next_id(),
            "number": repo.last_number,
            "state": "open",
            "title": title,
            "body": body.get("body") if isinstance(body.get("body"), str) else None,
            "head": branch,
            "base": base_branch,
            "labels": [],
            "user": {"login": f"{github.app.slug}[bot]", "type": "Bot"},
            "created_at": now,
            "updated_at": now,
            "closed_at": None,
        }
        repo.pulls[pull["number"]] = pull
        created = pull_json(repo, pull, api_base(request), now, web=web_base(request))
    return answer(created, status=201)


async def get_pull(request: Request) -> Response:
    """`GET /repos/{o}/{r}/pulls/{n}`."""
    repo = authorised_repo(request)
    github = github_of(request)
    with github.lock:
        pull = _pull(repo, request.path_params["number"])
        return answer(
            pull_json(repo, pull, api_base(request), github.clock(), web=web_base(request))
        )


async def update_pull(request: Request) -> Response:
    """`PATCH /repos/{o}/{r}/pulls/{n}`: change `title`, `body` or `state`; 200."""
    repo = authorised_repo(request)
    body = await json_body(request)
    state = body.get("state")
    if state is not None and state not in ("open", "closed"):
        raise _validation_failed("state must be open or closed")
    github = github_of(request)
    with github.lock:
        pull = _pull(repo, request.path_params["number"])
        now = github.clock()
        for name in ("title", "body"):
            if isinstance(body.get(name), str):
                pull[name] = body[name]
        if state is not None and state != pull["state"]:
            pull["state"] = state
            pull["closed_at"] = now if state == "closed" else None
        pull["updated_at"] = now
        return answer(pull_json(repo, pull, api_base(request), now, web=web_base(request)))


async def add_labels(request: Request) -> Response:
    """`POST /repos/{o}/{r}/issues/{n}/labels` with `{"labels": [...]}` (or a bare list)."""
    repo = authorised_repo(request)
    raw = await request.json() if await request.body() else None
    names = raw.get("labels") if isinstance(raw, dict) else raw
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        raise _validation_failed("labels must be a list of names")
    github = github_of(request)
    with github.lock:
        pull = _pull(repo, request.path_params["number"])
        known = {label["name"] for label in pull["labels"]}
        base = api_base(request)
        for name in names:
            if name not in known:
                pull["labels"].append(label_json(repo, name, github.next_id(), base))
                known.add(name)
        return answer(list(pull["labels"]))


ROUTES = [
    Route("/repos/{owner}/{repo}/pulls", list_pulls, methods=["GET"]),
    Route("/repos/{owner}/{repo}/pulls", create_pull, methods=["POST"]),
    Route("/repos/{owner}/{repo}/pulls/{number:int}", get_pull, methods=["GET"]),
    Route("/repos/{owner}/{repo}/pulls/{number:int}", update_pull, methods=["PATCH"]),
    Route("/repos/{owner}/{repo}/issues/{number:int}/labels", add_labels, methods=["POST"]),
]

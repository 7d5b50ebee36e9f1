"""Sandbox GitHub routes for issues: create, list, get and update (open, edit, close).

`POST /repos/{o}/{r}/issues` (201; 422 without a title), `GET /repos/{o}/{r}/issues`
(filters `state` and `labels`, newest first, paginated), `GET` and `PATCH
/repos/{o}/{r}/issues/{n}` (title, body, labels, `state` open/closed with
`state_reason`), answering the full issue object `@octokit/openapi` describes. Issues
and pull requests share their numbers, as on GitHub; unlike GitHub the list holds
issues only (GitHub lists pull requests too, marked by a `pull_request` key, which
callers skip). Comments are `github_routes_repos`' (one comment list per number).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from crcr.sandbox.github_http import (
    answer,
    api_base,
    authorised_repo,
    github_of,
    json_body,
    paginate,
)
from crcr.sandbox.github_model import ApiError, Repo, iso
from crcr.sandbox.github_pulls import label_json
from crcr.sandbox.github_state import SandboxGitHub
from crcr.sandbox.webhooks.objects import user

STATES = ("open", "closed")
STATE_REASONS = ("completed", "not_planned", "duplicate", "reopened")


def _invalid(message: str) -> ApiError:
    return ApiError(422, f"Validation Failed: {message}")


def issue_json(repo: Repo, issue: dict[str, Any], base: str, comments: int) -> dict[str, Any]:
    """The issue object as GitHub answers it (every field its description requires)."""
    number = issue["number"]
    api = f"{base}/repos/{repo.full_name}"
    closed = issue["closed_at"]
    return {
        "id": issue["id"],
        "node_id": f"I_{issue['id']}",
        "url": f"{api}/issues/{number}",
        "repository_url": api,
        "labels_url": f"{api}/issues/{number}/labels{{/name}}",
        "comments_url": f"{api}/issues/{number}/comments",
        "events_url": f"{api}/issues/{number}/events",
        "html_url": f"https://github.com/{repo.full_name}/issues/{number}",
        "number": number,
        "state": issue["state"],
        "state_reason": issue["state_reason"],
        "title": issue["title"],
        "body": issue["body"],
        "user": user(issue["user"], kind="Bot"),
        "labels": [label_json(repo, name, label_id, base) for name, label_id in issue["labels"]],
        "assignee": None,
        "assignees": [],
        "milestone": None,
        "locked": False,
        "active_lock_reason": None,
        "comments": comments,
        "closed_at": None if closed is None else iso(closed),
        "created_at": iso(issue["created_at"]),
        "updated_at": iso(issue["updated_at"]),
        "author_association": "NONE",
    }


def _answer(request: Request, repo: Repo, issue: dict[str, Any], status: int = 200) -> Response:
    comments = len(repo.comments.get(issue["number"], []))
    return answer(issue_json(repo, issue, api_base(request), comments), status=status)


def _labels(github: SandboxGitHub, raw: object) -> list[tuple[str, int]]:
    if not isinstance(raw, list) or not all(isinstance(name, str) for name in raw):
        raise _invalid("labels must be a list of names")
    return [(name, github.next_id()) for name in dict.fromkeys(raw)]


def _issue(repo: Repo, number: int) -> dict[str, Any]:
    issue = repo.issues.get(number)
    if issue is None:
        raise ApiError(404, "Not Found")
    return issue


async def create_issue(request: Request) -> Response:
    """`POST /repos/{o}/{r}/issues`: 201 with the new issue."""
    repo = authorised_repo(request)
    body = await json_body(request)
    title = body.get("title")
    if not isinstance(title, str) or not title.strip():
        raise _invalid('"title" wasn\'t supplied.')
    text = body.get("body")
    if text is not None and not isinstance(text, str):
        raise _invalid("body must be a string")
    github = github_of(request)
    with github.lock:
        repo.last_number += 1
        number, now = repo.last_number, github.clock()
        issue = {
            "id": github.next_id(),
            "number": number,
            "state": "open",
            "state_reason": None,
            "title": title,
            "body": text,
            "user": f"{github.app.slug}[bot]",
            "labels": _labels(github, body.get("labels", [])),
            "closed_at": None,
            "created_at": now,
            "updated_at": now,
        }
        repo.issues[number] = issue
        return _answer(request, repo, issue, status=201)


async def list_issues(request: Request) -> Response:
    """`GET /repos/{o}/{r}/issues`: newest first; `state` and every one of `labels`."""
    repo = authorised_repo(request)
    state = request.query_params.get("state", "open")
    if state not in ("open", "closed", "all"):
        raise _invalid("state must be open, closed or all")
    wanted = {name for name in request.query_params.get("labels", "").split(",") if name}
    github = github_of(request)
    with github.lock:
        chosen = [
            issue
            for issue in sorted(repo.issues.values(), key=lambda i: -i["number"])
            if state in ("all", issue["state"]) and wanted <= {name for name, _ in issue["labels"]}
        ]
        page, headers = paginate(request, chosen)
        base = api_base(request)
        listed = [
            issue_json(repo, issue, base, len(repo.comments.get(issue["number"], [])))
            for issue in page
        ]
    return answer(listed, headers=headers)


async def get_issue(request: Request) -> Response:
    """`GET /repos/{o}/{r}/issues/{n}`."""
    repo = authorised_repo(request)
    with github_of(request).lock:
        return _answer(request, repo, _issue(repo, request.path_params["number"]))


async def update_issue(request: Request) -> Response:
    """`PATCH /repos/{o}/{r}/issues/{n}`: title, body, labels, state and its reason."""
    repo = authorised_repo(request)
    body = await json_body(request)
    github = github_of(request)
    state, reason = body.get("state"), body.get("state_reason")
    if state is not None and state not in STATES:
        raise _invalid("state must be open or closed")
    if reason is not None and reason not in STATE_REASONS:
        raise _invalid("state_reason must be completed, not_planned, duplicate or reopened")
    with github.lock:
        issue = _issue(repo, request.path_params["number"])
        now = github.clock()
        for key in ("title", "body"):
            if isinstance(body.get(key), str):
                issue[key] = body[key]
        if "labels" in body:
            issue["labels"] = _labels(github, body["labels"])
        if state == "closed" and issue["state"] == "open":
            issue.update(state="closed", closed_at=now, state_reason=reason or "completed")
        elif state == "open" and issue["state"] == "closed":
            issue.update(state="open", closed_at=None, state_reason="reopened")
        issue["updated_at"] = now
        return _answer(request, repo, issue)


def issues_of(github: SandboxGitHub, full_name: str) -> list[dict[str, Any]]:
    """The issues of a repository as stored, oldest first (for tests and the demo)."""
    with github.lock:
        issues = sorted(github.repo(full_name).issues.values(), key=lambda i: i["number"])
        return [dict(issue, labels=[name for name, _ in issue["labels"]]) for issue in issues]


ROUTES = [
    Route("/repos/{owner}/{repo}/issues", create_issue, methods=["POST"]),
    Route("/repos/{owner}/{repo}/issues", list_issues, methods=["GET"]),
    Route("/repos/{owner}/{repo}/issues/{number:int}", get_issue, methods=["GET"]),
    Route("/repos/{owner}/{repo}/issues/{number:int}", update_issue, methods=["PATCH"]),
]

"""Sandbox GitHub routes that write a repository: git refs and the contents API's PUT.

As GitHub documents them: `GET /git/ref/{ref}`, `POST /git/refs` (201), `PATCH` and
`DELETE /git/refs/{ref}` (200, 204), and `PUT /contents/{path}` (201 created, 200
updated), with GitHub's refusals: 422 for a ref that exists or does not, a missing
object or a non-fast-forward update; 409 when the file's `sha` is not the current one.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from crcr.sandbox.github_git import (
    commit_file,
    delete_branch,
    head_of,
    is_ancestor,
    set_branch,
)
from crcr.sandbox.github_http import answer, api_base, authorised_repo, github_of, json_body
from crcr.sandbox.github_model import ApiError, Repo, git_blob_sha, iso
from crcr.sandbox.github_routes_repos import file_json


def _branch(ref: str) -> str:
    """`heads/<branch>` (the path form) or `refs/heads/<branch>` (the body form)."""
    name = ref.removeprefix("refs/").removeprefix("heads/")
    if not ref.removeprefix("refs/").startswith("heads/") or not name:
        raise ApiError(422, "Reference name is not a branch (expected heads/<name>)")
    return name


def _ref_json(repo: Repo, branch: str, sha: str, base: str) -> dict[str, Any]:
    return {
        "ref": f"refs/heads/{branch}",
        "node_id": f"REF_{repo.id}_{branch}",
        "url": f"{base}/repos/{repo.full_name}/git/refs/heads/{branch}",
        "object": {
            "sha": sha,
            "type": "commit",
            "url": f"{base}/repos/{repo.full_name}/git/commits/{sha}",
        },
    }


async def get_ref(request: Request) -> Response:
    """`GET /repos/{o}/{r}/git/ref/{ref}`: 200, or 404 for a branch that does not exist."""
    repo = authorised_repo(request)
    github = github_of(request)
    branch = _branch(request.path_params["ref"])
    with github.lock:
        sha = head_of(repo, branch, github.clock())
    if sha is None:
        raise ApiError(404, "Not Found")
    return answer(_ref_json(repo, branch, sha, api_base(request)))


async def create_ref(request: Request) -> Response:
    """`POST /repos/{o}/{r}/git/refs` with `ref` and `sha`: 201."""
    repo = authorised_repo(request)
    body = await json_body(request)
    ref, sha = body.get("ref"), body.get("sha")
    if not isinstance(ref, str) or not isinstance(sha, str):
        raise ApiError(422, 'Invalid request.\n\n"ref" and "sha" are required.')
    if not ref.startswith("refs/") or ref.count("/") < 2:
        raise ApiError(422, "ref must be fully qualified (refs/heads/<name>)")
    branch = _branch(ref)
    github = github_of(request)
    with github.lock:
        if head_of(repo, branch, github.clock()) is not None:
            raise ApiError(422, "Reference already exists")
        set_branch(repo, branch, sha)
    return answer(_ref_json(repo, branch, sha, api_base(request)), status=201)


async def update_ref(request: Request) -> Response:
    """`PATCH /repos/{o}/{r}/git/refs/{ref}` with `sha` (and `force`): 200."""
    repo = authorised_repo(request)
    body = await json_body(request)
    sha = body.get("sha")
    if not isinstance(sha, str):
        raise ApiError(422, 'Invalid request.\n\n"sha" wasn\'t supplied.')
    branch = _branch(request.path_params["ref"])
    github = github_of(request)
    with github.lock:
        current = head_of(repo, branch, github.clock())
        if current is None:
            raise ApiError(422, "Reference does not exist")
        if body.get("force") is not True and not is_ancestor(repo, current, sha):
            raise ApiError(422, "Update is not a fast forward")
        set_branch(repo, branch, sha)
    return answer(_ref_json(repo, branch, sha, api_base(request)))


async def delete_ref(request: Request) -> Response:
    """`DELETE /repos/{o}/{r}/git/refs/{ref}`: 204, or 422 when there is no such ref."""
    repo = authorised_repo(request)
    branch = _branch(request.path_params["ref"])
    github = github_of(request)
    with github.lock:
        if head_of(repo, branch, github.clock()) is None:
            raise ApiError(422, "Reference does not exist")
        delete_branch(repo, branch)
    return Response(status_code=204)


def _content(body: dict[str, Any]) -> bytes:
    message, content = body.get("message"), body.get("content")
    if not isinstance(message, str) or not message:
        raise ApiError(422, 'Invalid request.\n\n"message" wasn\'t supplied.')
    if not isinstance(content, str):
        raise ApiError(422, 'Invalid request.\n\n"content" wasn\'t supplied.')
    try:
        return base64.b64decode(content, validate=True)
    except binascii.Error:
        raise ApiError(422, "content is not valid Base64") from None


async def put_contents(request: Request) -> Response:
    """`PUT /repos/{o}/{r}/contents/{path}`: commit one file on a branch (201 new, 200 updated)."""
    repo = authorised_repo(request)
    body = await json_body(request)
    data = _content(body)
    path = request.path_params["path"].strip("/")
    github = github_of(request)
    base = api_base(request)
    with github.lock:
        branch = str(body.get("branch") or repo.default_branch)
        now = github.clock()
        if head_of(repo, branch, now) is None:
            raise ApiError(404, f"Branch {branch} not found")
        existing = repo.files.get((branch, path))
        if existing is not None and "sha" not in body:
            raise ApiError(422, 'Invalid request.\n\n"sha" wasn\'t supplied.')
        if existing is not None and body["sha"] != git_blob_sha(existing):
            raise ApiError(409, f"{path} does not match {body['sha']}")
        sha = commit_file(repo, branch, path, data, str(body["message"]), now)
        parent = repo.parents.get(sha)
    person = {"name": f"{github.app.slug}[bot]", "email": "bot@sandbox.invalid", "date": iso(now)}
    commit_url = f"{base}/repos/{repo.full_name}/git/commits/{sha}"
    commit = {
        "sha": sha,
        "node_id": f"C_{sha[:12]}",
        "url": commit_url,
        "html_url": f"https://github.com/{repo.full_name}/commit/{sha}",
        "author": person,
        "committer": person,
        "message": body["message"],
        "tree": {"sha": git_blob_sha(sha.encode()), "url": commit_url + "/tree"},
        "parents": [] if parent is None else [{"sha": parent, "url": commit_url, "html_url": ""}],
    }
    content = file_json(repo, path, branch, data, base)
    return answer({"content": content, "commit": commit}, status=200 if existing else 201)


ROUTES = [
    Route("/repos/{owner}/{repo}/git/ref/{ref:path}", get_ref, methods=["GET"]),
    Route("/repos/{owner}/{repo}/git/refs", create_ref, methods=["POST"]),
    Route("/repos/{owner}/{repo}/git/refs/{ref:path}", update_ref, methods=["PATCH"]),
    Route("/repos/{owner}/{repo}/git/refs/{ref:path}", delete_ref, methods=["DELETE"]),
    Route("/repos/{owner}/{repo}/contents/{path:path}", put_contents, methods=["PUT"]),
]

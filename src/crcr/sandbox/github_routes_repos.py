"""Sandbox GitHub repository routes: dispatches, repository, contents, commits, comments."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from crcr.sandbox.github_http import (
    answer,
    api_base,
    authorised_repo,
    github_of,
    json_body,
    no_content,
    paginate,
)
from crcr.sandbox.github_model import ApiError, Dispatch, Repo, git_blob_sha, iso
from crcr.sandbox.github_routes_compare import commit_json
from crcr.sandbox.webhooks.objects import user

# GitHub documents both limits for `client_payload`: at most 10 top-level properties,
# and 65,535 bytes of JSON (measured here on the compact encoding).
MAX_PAYLOAD_PROPERTIES = 10
MAX_PAYLOAD_BYTES = 65_535
# Above 1 MB the contents API leaves `content` empty (encoding "none"); clients must ask
# for the raw media type instead.
MAX_INLINE_CONTENT = 1_048_576
HEX = re.compile(r"^[0-9a-fA-F]{7,40}$")


def _invalid(message: str) -> ApiError:
    return ApiError(422, f"Invalid request.\n\n{message}")


async def create_dispatch(request: Request) -> Response:
    """`POST /repos/{o}/{r}/dispatches`: 204, or 422 for a body GitHub would refuse."""
    repo = authorised_repo(request)
    body = await json_body(request)  # validated here; kept as its bytes (`Dispatch`)
    event_type = body.get("event_type")
    if not isinstance(event_type, str) or not event_type:
        raise _invalid('"event_type" wasn\'t supplied.')
    if len(event_type) > 100:
        raise _invalid('"event_type" must be 100 characters or fewer.')
    payload = body.get("client_payload", {})
    if not isinstance(payload, dict):
        raise _invalid('For "client_payload", the value is not an object.')
    if len(payload) > MAX_PAYLOAD_PROPERTIES:
        raise _invalid(f"No more than 10 properties are allowed; {len(payload)} were supplied.")
    size = _encoded_size(payload)
    if size > MAX_PAYLOAD_BYTES:
        raise _invalid(f"client_payload is too large ({size} bytes, maximum {MAX_PAYLOAD_BYTES}).")
    github = github_of(request)
    raw = await request.body()
    github.record_dispatch(Dispatch.received(repo.full_name, event_type, raw, github.clock()))
    return no_content()


def _encoded_size(payload: dict[str, Any]) -> int:
    """The payload's size as compact JSON with non-ASCII escaped (`json.dumps`' way).

    orjson encodes a fan-out's 25 KB payload ~10x faster, and its bytes are
    `json.dumps`' own whenever they are all ASCII (no character `json` would escape),
    but for floats below 1e-4, which it writes without an exponent (`0.00001`, not
    `1e-05`): a byte or two that GitHub's own count is not known to match either.
    What orjson refuses (integers past 64 bits) or writes as UTF-8 is measured by
    `json`, as before.
    """
    try:
        encoded = orjson.dumps(payload)
    except TypeError:
        encoded = b"\x80"  # not ASCII: measured below
    if encoded.isascii():
        return len(encoded)
    return len(json.dumps(payload, separators=(",", ":")).encode())


async def get_repository(request: Request) -> Response:
    """`GET /repos/{o}/{r}`."""
    return answer(authorised_repo(request).as_json(api_base(request)))


def _wrapped_base64(data: bytes) -> str:
    """Base64 broken into 60-character lines, each ending in a newline, as GitHub sends it."""
    encoded = base64.b64encode(data).decode()
    return "".join(encoded[i : i + 60] + "\n" for i in range(0, len(encoded), 60))


def file_json(repo: Repo, path: str, ref: str, data: bytes, base: str) -> dict[str, Any]:
    inline = len(data) <= MAX_INLINE_CONTENT
    url = f"{base}/repos/{repo.full_name}/contents/{path}?ref={ref}"
    git_url = f"{base}/repos/{repo.full_name}/git/blobs/{git_blob_sha(data)}"
    html_url = f"https://github.com/{repo.full_name}/blob/{ref}/{path}"
    return {
        "type": "file",
        "encoding": "base64" if inline else "none",
        "size": len(data),
        "name": path.rsplit("/", 1)[-1],
        "path": path,
        "content": _wrapped_base64(data) if inline else "",
        "sha": git_blob_sha(data),
        "url": url,
        "git_url": git_url,
        "html_url": html_url,
        "download_url": f"https://raw.githubusercontent.com/{repo.full_name}/{ref}/{path}",
        "_links": {"self": url, "git": git_url, "html": html_url},
    }


async def get_contents(request: Request) -> Response:
    """`GET /repos/{o}/{r}/contents/{path}?ref=`: a file (base64) or a directory listing."""
    repo = authorised_repo(request)
    path = request.path_params["path"].strip("/")
    ref = request.query_params.get("ref") or repo.default_branch
    data = repo.files.get((ref, path))
    base = api_base(request)
    if data is not None:
        if "vnd.github.raw" in request.headers.get("accept", ""):
            return Response(data, media_type="application/vnd.github.raw")
        return answer(file_json(repo, path, ref, data, base))
    prefix = f"{path}/" if path else ""
    listing = [
        {
            key: value
            for key, value in file_json(repo, p, ref, d, base).items()
            if key not in ("content", "encoding")
        }
        for (r, p), d in sorted(repo.files.items())
        if r == ref and p.startswith(prefix) and "/" not in p[len(prefix) :]
    ]
    if not listing:
        raise ApiError(404, "Not Found")
    return answer(listing)


def _find_commit(repo: Repo, ref: str) -> str:
    if ref == repo.default_branch and repo.commits:
        return max(repo.commits, key=lambda sha: repo.commits[sha]["timestamp"])
    if HEX.match(ref):
        matches = [sha for sha in repo.commits if sha.startswith(ref.lower())]
        if len(matches) == 1:
            return matches[0]
    raise ApiError(422, f"No commit found for SHA: {ref}")


async def get_commit(request: Request) -> Response:
    """`GET /repos/{o}/{r}/commits/{ref}`: 422 for an unknown SHA, as GitHub answers."""
    repo = authorised_repo(request)
    sha = _find_commit(repo, request.path_params["ref"])
    if "vnd.github.sha" in request.headers.get("accept", ""):
        return Response(sha, media_type="application/vnd.github.sha")
    return answer({**commit_json(repo, sha, api_base(request)), "files": []})


def _comment_body(body: dict[str, Any]) -> str:
    text = body.get("body")
    if not isinstance(text, str) or not text:
        raise _invalid('"body" wasn\'t supplied.')
    return text


async def list_comments(request: Request) -> Response:
    """`GET /repos/{o}/{r}/issues/{n}/comments`, paginated like GitHub."""
    repo = authorised_repo(request)
    comments = repo.comments.get(request.path_params["number"], [])
    page, headers = paginate(request, comments)
    return answer(page, headers=headers)


async def create_comment(request: Request) -> Response:
    """`POST /repos/{o}/{r}/issues/{n}/comments`: 201 with the comment."""
    repo = authorised_repo(request)
    text = _comment_body(await json_body(request))
    github = github_of(request)
    number: int = request.path_params["number"]
    comment_id, now, base = github.next_id(), iso(github.clock()), api_base(request)
    comment = {
        "id": comment_id,
        "node_id": f"IC_{comment_id}",
        "url": f"{base}/repos/{repo.full_name}/issues/comments/{comment_id}",
        "html_url": f"https://github.com/{repo.full_name}/pull/{number}#issuecomment-{comment_id}",
        "issue_url": f"{base}/repos/{repo.full_name}/issues/{number}",
        "body": text,
        "user": user(f"{github.app.slug}[bot]", kind="Bot"),
        "author_association": "NONE",
        "created_at": now,
        "updated_at": now,
    }
    with github.lock:
        repo.comments.setdefault(number, []).append(comment)
    return answer(comment, status=201)


async def update_comment(request: Request) -> Response:
    """`PATCH /repos/{o}/{r}/issues/comments/{id}`: 200 with the edited comment."""
    repo = authorised_repo(request)
    text = _comment_body(await json_body(request))
    github = github_of(request)
    comment_id: int = request.path_params["comment_id"]
    with github.lock:
        for comments in repo.comments.values():
            for comment in comments:
                if comment["id"] == comment_id:
                    comment.update(body=text, updated_at=iso(github.clock()))
                    return answer(comment)
    raise ApiError(404, "Not Found")


ROUTES = [
    Route("/repos/{owner}/{repo}", get_repository, methods=["GET"]),
    Route("/repos/{owner}/{repo}/dispatches", create_dispatch, methods=["POST"]),
    Route("/repos/{owner}/{repo}/contents/{path:path}", get_contents, methods=["GET"]),
    Route("/repos/{owner}/{repo}/commits/{ref}", get_commit, methods=["GET"]),
    Route("/repos/{owner}/{repo}/issues/{number:int}/comments", list_comments, methods=["GET"]),
    Route("/repos/{owner}/{repo}/issues/{number:int}/comments", create_comment, methods=["POST"]),
    Route(
        "/repos/{owner}/{repo}/issues/comments/{comment_id:int}", update_comment, methods=["PATCH"]
    ),
]

"""Sandbox: a pull request's changed files, `GET /repos/{o}/{r}/pulls/{n}/files`.

GitHub answers at most 3,000 files, 100 a page at most (30 by default), as diff entries;
the relay judges `paths` / `paths_ignore` on them (SPEC §15). A test names the files of
a PR with `set_pull_files`; a PR without any named has none.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from crcr.sandbox.github_http import (
    answer,
    api_base,
    authorised_repo,
    github_of,
    paginate,
    web_base,
)
from crcr.sandbox.github_model import ApiError
from crcr.sandbox.github_state import SandboxGitHub

GITHUB_FILES_LIMIT = 3000
"""GitHub lists no more of a pull request's files than this."""


def set_pull_files(
    github: SandboxGitHub, full_name: str, number: int, files: Sequence[str]
) -> None:
    """The files pull request `number` changes at its current head (an open PR)."""
    repo = github.repo(full_name)
    with github.lock:
        pull = repo.pulls.get(number)
        if pull is None:
            raise KeyError(f"{full_name} has no pull request #{number}")
        pull["files"] = list(files)


def _diff_entry(api: str, web: str, full_name: str, head_sha: str, filename: str) -> dict[str, Any]:
    path = quote(filename)
    return {
        "sha": hashlib.sha256(f"{head_sha}:{filename}".encode()).hexdigest()[:40],
        "filename": filename,
        "status": "modified",
        "additions": 1,
        "deletions": 1,
        "changes": 2,
        "blob_url": f"{web}/{full_name}/blob/{head_sha}/{path}",
        "raw_url": f"{web}/{full_name}/raw/{head_sha}/{path}",
        "contents_url": f"{api}/repos/{full_name}/contents/{path}?ref={head_sha}",
        "patch": "@@ -1 +1 @@\n-old\n+new",
    }


async def list_pull_files(request: Request) -> Response:
    """`GET /repos/{o}/{r}/pulls/{n}/files`: diff entries, paginated, the first 3,000."""
    repo = authorised_repo(request)
    github = github_of(request)
    with github.lock:
        pull = repo.pulls.get(request.path_params["number"])
        if pull is None:
            raise ApiError(404, "Not Found")
        files = list(pull.get("files", []))[:GITHUB_FILES_LIMIT]
        head_sha = str(pull["head_sha"])
    api, web = api_base(request), web_base(request)
    page, headers = paginate(request, files)
    entries = [_diff_entry(api, web, repo.full_name, head_sha, name) for name in page]
    return answer(entries, headers=headers)


ROUTES = [
    Route("/repos/{owner}/{repo}/pulls/{number:int}/files", list_pull_files, methods=["GET"]),
]

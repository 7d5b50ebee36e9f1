"""Sandbox `GET /repos/{o}/{r}/compare/{base}...{head}` (SPEC §9, §14), as GitHub answers it.

The commits reachable from `head` and not from `base`, oldest first, paginated by
`per_page`/`page` with a `Link` header; `status`, `ahead_by` and `behind_by` as GitHub
computes them; 404 when either side names no commit. `base` and `head` may be branch
names or (abbreviated) SHAs.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from crcr.sandbox.github_history import ancestors, parents_of
from crcr.sandbox.github_http import answer, api_base, authorised_repo, github_of, paginate
from crcr.sandbox.github_model import ApiError, Repo, iso

WEB = "https://github.com"


def _resolve(repo: Repo, ref: str) -> str:
    if ref in repo.refs:
        return repo.refs[ref]
    matches = [sha for sha in repo.commits if sha.startswith(ref.lower())] if len(ref) >= 7 else []
    if len(matches) != 1:
        raise ApiError(404, "Not Found")
    return matches[0]


def commit_json(repo: Repo, sha: str, base: str) -> dict[str, Any]:
    """GitHub's `commit` object (components/schemas/commit), as the compare lists it."""
    commit = repo.commits[sha]
    person = {
        "name": "Sandbox",
        "email": "sandbox@example.invalid",
        "date": iso(commit["timestamp"]),
    }
    url = f"{base}/repos/{repo.full_name}/commits/{sha}"
    return {
        "sha": sha,
        "node_id": f"C_{sha[:12]}",
        "url": url,
        "html_url": f"{WEB}/{repo.full_name}/commit/{sha}",
        "comments_url": f"{url}/comments",
        "commit": {
            "url": f"{base}/repos/{repo.full_name}/git/commits/{sha}",
            "author": person,
            "committer": person,
            "message": commit["message"],
            "tree": {"sha": sha, "url": f"{base}/repos/{repo.full_name}/git/trees/{sha}"},
            "comment_count": 0,
        },
        "author": None,
        "committer": None,
        "parents": [
            {
                "sha": parent,
                "url": f"{base}/repos/{repo.full_name}/commits/{parent}",
                "html_url": f"{WEB}/{repo.full_name}/commit/{parent}",
            }
            for parent in parents_of(repo, sha)
        ],
    }


async def compare(request: Request) -> Response:
    """`GET /repos/{o}/{r}/compare/{base}...{head}`: 200 with the comparison, or 404."""
    repo = authorised_repo(request)
    basehead: str = request.path_params["basehead"]
    if "..." not in basehead:
        raise ApiError(404, "Not Found")
    base_ref, head_ref = basehead.split("...", 1)
    with github_of(request).lock:
        base_sha, head_sha = _resolve(repo, base_ref), _resolve(repo, head_ref)
        behind, ahead = ancestors(repo, base_sha), ancestors(repo, head_sha)
        order = {sha: n for n, sha in enumerate(repo.commits)}
        listed = sorted(ahead - behind, key=lambda sha: order.get(sha, -1))
        api = api_base(request)
        page, headers = paginate(request, listed)
        commits = [commit_json(repo, sha, api) for sha in page]
        base_commit = commit_json(repo, base_sha, api)
        merge_base = max(behind & ahead, key=lambda sha: order.get(sha, -1), default=base_sha)
        merge_base_commit = commit_json(repo, merge_base, api)
    behind_by = len(behind - ahead)
    status = "identical" if base_sha == head_sha else "ahead" if not behind_by else "diverged"
    if listed == [] and behind_by:
        status = "behind"
    link = f"{WEB}/{repo.full_name}/compare/{basehead}"
    body = {
        "url": f"{api}/repos/{repo.full_name}/compare/{basehead}",
        "html_url": link,
        "permalink_url": f"{WEB}/{repo.full_name}/compare/{base_sha}...{head_sha}",
        "diff_url": f"{link}.diff",
        "patch_url": f"{link}.patch",
        "base_commit": base_commit,
        "merge_base_commit": merge_base_commit,
        "status": status,
        "ahead_by": len(listed),
        "behind_by": behind_by,
        "total_commits": len(listed),
        "commits": commits,
        "files": [],
    }
    return answer(body, headers=headers)


ROUTES = [Route("/repos/{owner}/{repo}/compare/{basehead:path}", compare, methods=["GET"])]

"""`push` webhook payloads: branch pushes, tag pushes and branch deletions."""

from __future__ import annotations

from typing import Any

from crcr.sandbox.webhooks.objects import (
    WEB,
    fake_sha,
    installation,
    organization,
    repository,
    user,
)
from crcr.sandbox.webhooks.pull_requests import UPSTREAM

ZERO_SHA = "0" * 40
_PUSH_TIME = "2026-01-15T10:00:00+00:00"  # push commits use offsets, not "Z"


def _commit(repo: str, sha: str, index: int, author: str) -> dict[str, Any]:
    person = {"name": author.title(), "email": f"{author}@example.com", "username": author}
    return {
        "id": sha,
        "tree_id": fake_sha(f"tree:{sha}"),
        "distinct": True,
        "message": f"[inductor] Step {index} of the fused reduction fix\n\n"
        f"Pull Request resolved: {WEB}/{repo}/pull/{1000 + index}",
        "timestamp": _PUSH_TIME,
        "url": f"{WEB}/{repo}/commit/{sha}",
        "author": person,
        "committer": {"name": "GitHub", "email": "noreply@github.com", "username": "web-flow"},
        "added": [f"test/test_fused_{index}.py"],
        "removed": [],
        "modified": ["torch/_inductor/codegen/triton.py", "torch/_inductor/ir.py"],
    }


def push_event(
    *,
    repo: str = UPSTREAM,
    ref: str = "refs/heads/main",
    before: str | None = None,
    after: str | None = None,
    commit_count: int = 1,
    deleted: bool = False,
    default_branch: str = "main",
    pusher: str = "merge-bot",
    installation_id: int = 1,
) -> dict[str, Any]:
    """Build a `push` payload; `deleted=True` makes it a branch (or tag) deletion."""
    before = before or fake_sha(f"{repo}:{ref}:before")
    after = ZERO_SHA if deleted else (after or fake_sha(f"{repo}:{ref}:after"))
    commit_shas = [fake_sha(f"{repo}:{ref}:{i}") for i in range(commit_count - 1)] + [after]
    commits = [] if deleted else [
        _commit(repo, sha, i, pusher) for i, sha in enumerate(commit_shas, 1)
    ]  # fmt: skip
    return {
        "ref": ref,
        "before": before,
        "after": after,
        "repository": repository(repo, default_branch=default_branch, for_push=True),
        "pusher": {"name": pusher, "email": f"{pusher}@example.com"},
        "organization": organization(repo.partition("/")[0]),
        "installation": installation(installation_id),
        "sender": user(pusher, kind="Bot"),
        "created": before == ZERO_SHA,
        "deleted": deleted,
        "forced": False,
        "base_ref": None,
        "compare": f"{WEB}/{repo}/compare/{before[:12]}...{after[:12]}",
        "commits": commits,
        "head_commit": commits[-1] if commits else None,
    }


def branch_push(branch: str = "main", **kwargs: Any) -> dict[str, Any]:
    """A push of new commits to a branch (the default branch unless named)."""
    return push_event(ref=f"refs/heads/{branch}", **kwargs)


def tag_push(tag: str = "v2.6.0", **kwargs: Any) -> dict[str, Any]:
    """A new tag: GitHub sends it with `before` all zeros and `created: true`."""
    return push_event(ref=f"refs/tags/{tag}", before=ZERO_SHA, **kwargs)


def branch_deletion(branch: str, **kwargs: Any) -> dict[str, Any]:
    """A deleted branch: `after` is all zeros, no commits, `deleted: true`."""
    return push_event(ref=f"refs/heads/{branch}", deleted=True, **kwargs)

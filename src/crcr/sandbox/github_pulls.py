"""The sandbox's pull requests: stored fields in, GitHub's pull-request object out."""

from __future__ import annotations

from typing import Any

from crcr.sandbox.github_git import head_of
from crcr.sandbox.github_model import Repo, iso
from crcr.sandbox.webhooks.objects import user
from crcr.sandbox.webhooks.pull_requests import pull_links


def _branch_side(repo: Repo, branch: str, sha: str | None, base: str) -> dict[str, Any]:
    owner = repo.owner
    return {
        "label": f"{owner}:{branch}",
        "ref": branch,
        "sha": sha or "",
        "user": user(owner, kind="Organization"),
        "repo": repo.as_json(base),
    }


def pull_json(
    repo: Repo, pull: dict[str, Any], base: str, now: float, *, web: str
) -> dict[str, Any]:
    """The full pull-request object (`GET`, `POST`, `PATCH` answer it; lists carry it too).

    Its `html_url` is the sandbox's own view of the PR (`web`), not github.com, where
    the sandbox's repositories do not exist.
    """
    number = pull["number"]
    api = f"{base}/repos/{repo.full_name}"
    html = f"{web}/{repo.full_name}/pull/{number}"
    head_sha = head_of(repo, pull["head"], now) or pull.get("head_sha")
    pull["head_sha"] = head_sha  # a deleted branch keeps showing its last commit
    return {
        "url": f"{api}/pulls/{number}",
        "id": pull["id"],
        "node_id": f"PR_{pull['id']}",
        "html_url": html,
        "diff_url": html + ".diff",
        "patch_url": html + ".patch",
        "issue_url": f"{api}/issues/{number}",
        "commits_url": f"{api}/pulls/{number}/commits",
        "review_comments_url": f"{api}/pulls/{number}/comments",
        "review_comment_url": f"{api}/pulls/comments{{/number}}",
        "comments_url": f"{api}/issues/{number}/comments",
        "statuses_url": f"{api}/statuses/{head_sha}",
        "number": number,
        "state": pull["state"],
        "locked": False,
        "title": pull["title"],
        "user": user(pull["user"]["login"], kind=pull["user"].get("type", "User")),
        "body": pull["body"],
        "labels": list(pull["labels"]),
        "milestone": None,
        "active_lock_reason": None,
        "created_at": iso(pull["created_at"]),
        "updated_at": iso(pull["updated_at"]),
        "closed_at": iso(pull["closed_at"]) if pull["closed_at"] else None,
        "merged_at": iso(pull["merged_at"]) if pull.get("merged_at") else None,
        "merge_commit_sha": None,
        "assignee": None,
        "assignees": [],
        "requested_reviewers": [],
        "requested_teams": [],
        "head": _branch_side(repo, pull["head"], head_sha, base),
        "base": _branch_side(repo, pull["base"], head_of(repo, pull["base"], now), base),
        "_links": pull_links(base, web, repo.full_name, number, head_sha or ""),
        "author_association": "NONE",
        "auto_merge": None,
        "draft": False,
        "merged": bool(pull.get("merged")),
        "mergeable": True,
        "rebaseable": True,
        "mergeable_state": "clean",
        "merged_by": user(pull["merged_by"]) if pull.get("merged_by") else None,
        "comments": len(repo.comments.get(number, [])),
        "review_comments": 0,
        "maintainer_can_modify": False,
        "commits": 1,
        "additions": 1,
        "deletions": 1,
        "changed_files": 1,
    }


def label_json(repo: Repo, name: str, label_id: int, base: str) -> dict[str, Any]:
    """A label object as GitHub answers it."""
    return {
        "id": label_id,
        "node_id": f"LA_{label_id}",
        "url": f"{base}/repos/{repo.full_name}/labels/{name}",
        "name": name,
        "description": None,
        "color": "ededed",
        "default": False,
    }

"""`pull_request` webhook payloads: opened, synchronize, reopened, closed, labeled, …"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from crcr.sandbox.webhooks.objects import (
    API,
    DEFAULT_TIME,
    WEB,
    fake_sha,
    installation,
    label,
    node_id,
    organization,
    repository,
    stable_id,
    user,
)

UPSTREAM = "pytorch/pytorch"

_BODY_PARAGRAPHS = (
    "Fixes a numerical mismatch in the fused kernel when the inner dimension is not a "
    "multiple of the vector width. The tail loop now reuses the accumulator instead of "
    "starting from zero, which matches the eager implementation.",
    "Test plan:\n```\npython test/test_ops.py -k test_fused_reduction -v\n"
    "python test/inductor/test_torchinductor.py -k tail\n```",
    "- [x] added a regression test\n- [x] ran the relevant test suites locally\n"
    "- [ ] benchmarked on all backends",
    "cc @oncall-a @oncall-b @oncall-c",
)


def pr_body(size: int | None = None) -> str:
    """A realistic PR description, padded to exactly `size` UTF-8 bytes when given.

    Big bodies are what push real payloads past GitHub's 65,535-byte dispatch cap.
    """
    text = "\n\n".join(_BODY_PARAGRAPHS)
    if size is None:
        return text
    log_line = "E   AssertionError: Tensor-likes are not close! (mismatch 0.01%)\n"
    while len(text.encode()) < size:
        text += "\n" + log_line * 20
    return text.encode()[:size].decode("utf-8", errors="ignore").ljust(size, " ")


def pull_links(api: str, web: str, repo: str, number: int, head_sha: str) -> dict[str, Any]:
    """A pull request's `_links`, for the API at `api` and the web at `web`."""
    base = f"{api}/repos/{repo}"
    return {
        "self": {"href": f"{base}/pulls/{number}"},
        "html": {"href": f"{web}/{repo}/pull/{number}"},
        "issue": {"href": f"{base}/issues/{number}"},
        "comments": {"href": f"{base}/issues/{number}/comments"},
        "review_comments": {"href": f"{base}/pulls/{number}/comments"},
        "review_comment": {"href": f"{base}/pulls/comments{{/number}}"},
        "commits": {"href": f"{base}/pulls/{number}/commits"},
        "statuses": {"href": f"{base}/statuses/{head_sha}"},
    }


def _branch(repo_full_name: str, ref: str, sha: str, *, default_branch: str) -> dict[str, Any]:
    owner = repo_full_name.partition("/")[0]
    return {
        "label": f"{owner}:{ref}",
        "ref": ref,
        "sha": sha,
        "user": user(owner, kind="Organization"),
        "repo": repository(repo_full_name, default_branch=default_branch),
    }


def pull_request_event(
    action: str,
    *,
    repo: str = UPSTREAM,
    number: int = 1,
    head_sha: str | None = None,
    base_sha: str | None = None,
    head_ref: str = "fix-fused-reduction",
    base_ref: str = "main",
    head_repo: str | None = None,
    author: str = "contributor",
    title: str = "[inductor] Fix tail handling in fused reductions",
    body: str | None = None,
    body_size: int | None = None,
    labels: Sequence[str] = (),
    label_name: str | None = None,
    merged: bool = False,
    before: str | None = None,
    at: str = DEFAULT_TIME,
    installation_id: int = 1,
) -> dict[str, Any]:
    """Build a `pull_request` webhook payload.

    `labeled`/`unlabeled` name the label in `label_name` (it is added to `labels` for
    `labeled`); `synchronize` carries `before`/`after`; `closed` sets `merged`.
    `head_repo` names a fork; by default the branch lives in `repo` itself.
    """
    head_sha = head_sha or fake_sha(f"{repo}#{number}:head")
    base_sha = base_sha or fake_sha(f"{repo}:{base_ref}")
    label_names = list(labels)
    if action == "labeled" and label_name and label_name not in label_names:
        label_names.append(label_name)
    closed = action == "closed"
    pr_id = stable_id(f"{repo}#{number}")
    base_url = f"{API}/repos/{repo}"
    author_object = user(author)
    pull_request = {
        "url": f"{base_url}/pulls/{number}",
        "id": pr_id,
        "node_id": node_id("PullRequest", pr_id),
        "html_url": f"{WEB}/{repo}/pull/{number}",
        "diff_url": f"{WEB}/{repo}/pull/{number}.diff",
        "patch_url": f"{WEB}/{repo}/pull/{number}.patch",
        "issue_url": f"{base_url}/issues/{number}",
        "number": number,
        "state": "closed" if closed else "open",
        "locked": False,
        "title": title,
        "user": author_object,
        "body": body if body is not None else pr_body(body_size),
        "created_at": "2026-01-14T08:30:00Z",
        "updated_at": at,
        "closed_at": at if closed else None,
        "merged_at": at if closed and merged else None,
        "merge_commit_sha": fake_sha(f"{repo}#{number}:merge"),
        "assignee": None,
        "assignees": [],
        "requested_reviewers": [user("reviewer-one"), user("reviewer-two")],
        "requested_teams": [],
        "labels": [label(repo, name) for name in label_names],
        "milestone": None,
        "draft": False,
        "commits_url": f"{base_url}/pulls/{number}/commits",
        "review_comments_url": f"{base_url}/pulls/{number}/comments",
        "review_comment_url": f"{base_url}/pulls/comments{{/number}}",
        "comments_url": f"{base_url}/issues/{number}/comments",
        "statuses_url": f"{base_url}/statuses/{head_sha}",
        "head": _branch(head_repo or repo, head_ref, head_sha, default_branch=base_ref),
        "base": _branch(repo, base_ref, base_sha, default_branch=base_ref),
        "_links": pull_links(API, WEB, repo, number, head_sha),
        "author_association": "CONTRIBUTOR",
        "auto_merge": None,
        "active_lock_reason": None,
        "merged": closed and merged,
        "mergeable": None,
        "rebaseable": None,
        "mergeable_state": "unknown",
        "merged_by": user("merge-bot", kind="Bot") if closed and merged else None,
        "comments": 3,
        "review_comments": 1,
        "maintainer_can_modify": False,
        "commits": 2,
        "additions": 41,
        "deletions": 7,
        "changed_files": 3,
    }
    payload: dict[str, Any] = {"action": action, "number": number}
    if action == "synchronize":
        payload["before"] = before or fake_sha(f"{repo}#{number}:previous")
        payload["after"] = head_sha
    if action == "edited":
        # Required by GitHub's schema: what the edit changed (here, the title).
        payload["changes"] = {"title": {"from": f"{pull_request['title']} (draft)"}}
    payload["pull_request"] = pull_request
    if action in ("labeled", "unlabeled") and label_name:
        payload["label"] = label(repo, label_name)
    payload["repository"] = repository(repo, default_branch=base_ref)
    payload["organization"] = organization(repo.partition("/")[0])
    payload["sender"] = author_object
    payload["installation"] = installation(installation_id)
    return payload

"""Sandbox `merge_group` webhooks (SPEC §15): a merge queue asking for checks, or dropping
a group, shaped as GitHub sends them."""

from __future__ import annotations

from typing import Any

from crcr.sandbox.webhooks.objects import (
    DEFAULT_TIME,
    fake_sha,
    installation,
    organization,
    repository,
    user,
)
from crcr.sandbox.webhooks.pull_requests import UPSTREAM


def merge_group_event(
    action: str = "checks_requested",
    *,
    repo: str = UPSTREAM,
    head_sha: str | None = None,
    base_ref: str = "main",
    pull_number: int = 1,
    reason: str = "dequeued",
    sender: str = "contributor",
    installation_id: int = 1,
) -> dict[str, Any]:
    """A `merge_group` payload; `destroyed` carries why (`merged`, `invalidated`, `dequeued`)."""
    head_sha = head_sha or fake_sha(f"{repo}:merge-group:{pull_number}")
    base_sha = fake_sha(f"{repo}:{base_ref}")
    head_ref = f"refs/heads/gh-readonly-queue/{base_ref}/pr-{pull_number}-{base_sha}"
    event: dict[str, Any] = {
        "action": action,
        "merge_group": {
            "head_sha": head_sha,
            "head_ref": head_ref,
            "base_sha": base_sha,
            "base_ref": f"refs/heads/{base_ref}",
            "head_commit": {
                "id": head_sha,
                "tree_id": fake_sha(f"{head_sha}:tree"),
                "message": f"Merge pull request #{pull_number}",
                "timestamp": DEFAULT_TIME,
                "author": {"name": sender, "email": f"{sender}@users.noreply.github.com"},
                "committer": {"name": "GitHub", "email": "noreply@github.com"},
            },
        },
        "repository": repository(repo),
        "organization": organization(repo.partition("/")[0]),
        "sender": user(sender),
        "installation": installation(installation_id),
    }
    if action == "destroyed":
        event["reason"] = reason
    return event

"""`check_run` and `check_suite` payloads, as sent when someone clicks "Re-run"."""

from __future__ import annotations

from typing import Any

from crcr.sandbox.webhooks.objects import (
    API,
    DEFAULT_TIME,
    WEB,
    fake_sha,
    github_app,
    installation,
    node_id,
    organization,
    repository,
    stable_id,
    user,
)
from crcr.sandbox.webhooks.pull_requests import UPSTREAM


def _pull_request_refs(repo: str, number: int, head_sha: str, head_branch: str) -> dict[str, Any]:
    """The short PR reference check suites and runs list (not the full PR object)."""
    repo_stub = {"id": stable_id(repo), "url": f"{API}/repos/{repo}", "name": repo.split("/")[1]}
    return {
        "url": f"{API}/repos/{repo}/pulls/{number}",
        "id": stable_id(f"{repo}#{number}"),
        "number": number,
        "head": {"ref": head_branch, "sha": head_sha, "repo": repo_stub},
        "base": {"ref": "main", "sha": fake_sha(f"{repo}:main"), "repo": repo_stub},
    }


def _suite(repo: str, head_sha: str, head_branch: str, pull_number: int | None) -> dict[str, Any]:
    suite_id = stable_id(f"{repo}:suite:{head_sha}")
    pulls = [] if pull_number is None else [
        _pull_request_refs(repo, pull_number, head_sha, head_branch)
    ]  # fmt: skip
    return {
        "id": suite_id,
        "node_id": node_id("CheckSuite", suite_id),
        "head_branch": head_branch,
        "head_sha": head_sha,
        "status": "completed",
        "conclusion": "failure",
        "url": f"{API}/repos/{repo}/check-suites/{suite_id}",
        "before": fake_sha(f"{repo}:{head_sha}:before"),
        "after": head_sha,
        "pull_requests": pulls,
        "app": github_app(),
        "created_at": DEFAULT_TIME,
        "updated_at": DEFAULT_TIME,
    }


def check_run_event(
    action: str = "rerequested",
    *,
    repo: str = UPSTREAM,
    head_sha: str | None = None,
    name: str = "crcr / L4 / acme/gpu-ci",
    check_run_id: int | None = None,
    head_branch: str = "fix-fused-reduction",
    pull_number: int | None = 1,
    sender: str = "contributor",
    installation_id: int = 1,
    external_id: str = "",
    details_url: str | None = None,
    identifier: str | None = None,
) -> dict[str, Any]:
    """Build a `check_run` payload (by default a re-run request for a failed run).

    `requested_action` names the pressed button's `identifier` (SPEC §15).
    """
    head_sha = head_sha or fake_sha(f"{repo}#{pull_number}:head")
    run_id = check_run_id or stable_id(f"{repo}:run:{name}:{head_sha}")
    suite = _suite(repo, head_sha, head_branch, pull_number)
    check_run = {
        "id": run_id,
        "name": name,
        "node_id": node_id("CheckRun", run_id),
        "head_sha": head_sha,
        "external_id": external_id,
        "url": f"{API}/repos/{repo}/check-runs/{run_id}",
        "html_url": f"{WEB}/{repo}/runs/{run_id}",
        "details_url": details_url or f"{WEB}/acme/gpu-ci/actions/runs/{run_id}",
        "status": "completed",
        "conclusion": "failure",
        "started_at": DEFAULT_TIME,
        "completed_at": DEFAULT_TIME,
        "output": {
            "title": "1 job failed",
            "summary": "test_fused_reduction failed on the downstream backend",
            "text": None,
            "annotations_count": 0,
            "annotations_url": f"{API}/repos/{repo}/check-runs/{run_id}/annotations",
        },
        "check_suite": suite,
        "app": github_app(),
        "pull_requests": suite["pull_requests"],
    }
    event: dict[str, Any] = {
        "action": action,
        "check_run": check_run,
        "repository": repository(repo),
        "organization": organization(repo.partition("/")[0]),
        "sender": user(sender),
        "installation": installation(installation_id),
    }
    if action == "requested_action":
        event["requested_action"] = {"identifier": identifier or ""}
    return event


def check_suite_event(
    action: str = "rerequested",
    *,
    repo: str = UPSTREAM,
    head_sha: str | None = None,
    head_branch: str = "fix-fused-reduction",
    pull_number: int | None = 1,
    sender: str = "contributor",
    installation_id: int = 1,
) -> dict[str, Any]:
    """Build a `check_suite` payload (by default "Re-run all checks")."""
    head_sha = head_sha or fake_sha(f"{repo}#{pull_number}:head")
    suite = _suite(repo, head_sha, head_branch, pull_number)
    suite["latest_check_runs_count"] = 3
    suite["check_runs_url"] = f"{suite['url']}/check-runs"
    suite["head_commit"] = {
        "id": head_sha,
        "tree_id": fake_sha(f"tree:{head_sha}"),
        "message": "[inductor] Fix tail handling in fused reductions",
        "timestamp": DEFAULT_TIME,
        "author": {"name": "Contributor", "email": "contributor@example.com"},
        "committer": {"name": "GitHub", "email": "noreply@github.com"},
    }
    return {
        "action": action,
        "check_suite": suite,
        "repository": repository(repo),
        "organization": organization(repo.partition("/")[0]),
        "sender": user(sender),
        "installation": installation(installation_id),
    }

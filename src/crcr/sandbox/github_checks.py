"""Check runs and suites as GitHub models them: validation, the object, "latest" filtering."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from crcr.sandbox.github_identity import SandboxApp
from crcr.sandbox.github_model import ApiError, Repo, iso
from crcr.sandbox.webhooks.objects import github_app

SHA_PATTERN = re.compile(r"^[0-9a-fA-F]{40}$")
STATUSES = frozenset({"queued", "in_progress", "completed", "waiting", "requested", "pending"})
CONCLUSIONS = frozenset(
    {
        "action_required",
        "cancelled",
        "failure",
        "neutral",
        "success",
        "skipped",
        "stale",
        "timed_out",
    }
)


def _invalid(message: str) -> ApiError:
    return ApiError(422, f"Invalid request.\n\n{message}")


def _validated(body: Mapping[str, Any]) -> tuple[str, str, str, str | None]:
    """Return (name, head_sha, status, conclusion) or raise GitHub's 422."""
    name, head_sha = body.get("name"), body.get("head_sha")
    if not isinstance(name, str) or not name:
        raise _invalid('"name" wasn\'t supplied.')
    if not isinstance(head_sha, str) or not SHA_PATTERN.match(head_sha):
        raise ApiError(422, f"No commit found for SHA: {head_sha}")
    status = body.get("status", "queued")
    conclusion = body.get("conclusion")
    if status not in STATUSES:
        raise _invalid(f"{status!r} is not a member of {sorted(STATUSES)}.")
    if conclusion is not None and conclusion not in CONCLUSIONS:
        raise _invalid(f"{conclusion!r} is not a member of {sorted(CONCLUSIONS)}.")
    if conclusion is not None:
        status = "completed"
    if status == "completed" and conclusion is None:
        raise _invalid('"conclusion" is required when "status" is "completed".')
    output = body.get("output")
    if output is not None and (
        not isinstance(output, dict) or "title" not in output or "summary" not in output
    ):
        raise _invalid('"output" needs "title" and "summary".')
    return name, head_sha.lower(), status, conclusion


def suite_id_for(repo: Repo, head_sha: str, new_id: int) -> int:
    """The App's check suite on `head_sha`, created on first use (one per app and commit)."""
    return repo.check_suites.setdefault(head_sha, new_id)


def build_check_run(
    *,
    repo: Repo,
    body: Mapping[str, Any],
    run_id: int,
    app: SandboxApp,
    now: float,
    api_base: str,
) -> dict[str, Any]:
    """The check-run object GitHub answers a create with (after validating the body).

    The caller places it in a check suite (`suite_id_for`) once the body proved valid.
    """
    name, head_sha, status, conclusion = _validated(body)
    output = dict(body.get("output") or {})
    return {
        "id": run_id,
        "node_id": f"CR_{run_id}",
        "head_sha": head_sha,
        "external_id": body.get("external_id", ""),
        "url": f"{api_base}/repos/{repo.full_name}/check-runs/{run_id}",
        "html_url": f"https://github.com/{repo.full_name}/runs/{run_id}",
        "details_url": body.get("details_url", f"https://github.com/{repo.full_name}"),
        "status": status,
        "conclusion": conclusion,
        "started_at": body.get("started_at", iso(now)),
        "completed_at": body.get("completed_at", iso(now) if status == "completed" else None),
        "output": {
            "title": output.get("title"),
            "summary": output.get("summary"),
            "text": output.get("text"),
            "annotations_count": len(output.get("annotations", [])),
            "annotations_url": f"{api_base}/repos/{repo.full_name}/check-runs/{run_id}/annotations",
        },
        "name": name,
        "check_suite": {"id": 0},
        "app": {**github_app(app.slug), "id": app.app_id},
        "pull_requests": [],
    }


def select_check_runs(
    runs: Iterable[dict[str, Any]], query: Mapping[str, str]
) -> list[dict[str, Any]]:
    """Apply GitHub's list filters: `check_name`, `status`, and `filter=latest|all`.

    `latest` (GitHub's default) keeps only the most recent run of each name, which is
    why crcr creates new check runs rather than editing old ones.
    """
    selected = list(runs)
    if "check_name" in query:
        selected = [run for run in selected if run["name"] == query["check_name"]]
    if "status" in query:
        selected = [run for run in selected if run["status"] == query["status"]]
    if query.get("filter", "latest") == "latest":
        newest: dict[str, dict[str, Any]] = {}
        for run in selected:
            if run["name"] not in newest or run["id"] > newest[run["name"]]["id"]:
                newest[run["name"]] = run
        selected = list(newest.values())
    return sorted(selected, key=lambda run: run["id"], reverse=True)

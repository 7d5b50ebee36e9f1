"""Builders of SPEC §6 results bodies, as our relay and PyTorch's relay send them."""

from __future__ import annotations

import copy
from typing import Any


def our_body(
    *,
    repo: str = "acme/xpu-backend",
    level: str = "L3",
    event_type: str = "pull_request",
    pr_number: int = 101,
    head_sha: str = "a" * 40,
    delivery_id: str = "delivery-1",
    status: str = "in_progress",
    conclusion: str | None = None,
    workflow: str = "CI",
    job: str = "test",
    run_id: str = "9001",
    run_attempt: str = "1",
    check_run_id: str = "5001",
    queue_time: float | None = 12.5,
    execution_time: float | None = None,
    started_at: str | None = "2026-11-20T10:00:00Z",
    completed_at: str | None = None,
    **workflow_extra: Any,
) -> dict[str, Any]:
    """A body from our relay: `trusted.dispatch` carries the upstream context."""
    return {
        "trusted": {
            "verified_repo": repo,
            "downstream_repo_level": level,
            "ci_metrics": {"queue_time": queue_time, "execution_time": execution_time},
            "dispatch": {
                "upstream_repo": "pytorch/pytorch",
                "event_type": event_type,
                "head_sha": head_sha,
                "pr_number": pr_number,
            },
        },
        "untrusted": {
            "callback_payload": {
                "event_type": event_type,
                "delivery_id": delivery_id,
                "payload": {
                    "repository": {"full_name": "pytorch/pytorch"},
                    "pull_request": {"number": pr_number, "head": {"sha": head_sha}},
                },
                "workflow": {
                    "schema_version": "1",
                    "status": status,
                    "conclusion": conclusion,
                    "name": workflow,
                    "url": f"https://github.com/{repo}/actions/runs/{run_id}",
                    "run_id": run_id,
                    "run_attempt": run_attempt,
                    "job_name": job,
                    "check_run_id": check_run_id,
                    "started_at": started_at,
                    "completed_at": completed_at,
                    **workflow_extra,
                },
            }
        },
    }


def reference_body(**kwargs: Any) -> dict[str, Any]:
    """The same body as PyTorch's relay sends it: no `trusted.dispatch`."""
    body = copy.deepcopy(our_body(**kwargs))
    del body["trusted"]["dispatch"]
    return body


def completed(
    body: dict[str, Any], conclusion: str, execution_time: float = 60.0
) -> dict[str, Any]:
    """The `completed` callback that follows `body`'s `in_progress` one."""
    done = copy.deepcopy(body)
    done["trusted"]["ci_metrics"] = {"queue_time": None, "execution_time": execution_time}
    workflow = done["untrusted"]["callback_payload"]["workflow"]
    workflow.update(
        status="completed",
        conclusion=conclusion,
        started_at=None,
        completed_at="2026-11-20T10:05:00Z",
    )
    return done

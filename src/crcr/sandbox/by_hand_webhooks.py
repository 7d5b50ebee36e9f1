"""The upstream webhooks `crcr sandbox webhook` sends, by the names a person types.

Pure: a kind and a few facts in, GitHub's event name and payload out (built by the
sandbox's webhook builders, so they are the payloads the tests and the demo send).
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any

from crcr.sandbox.webhooks import branch_push, pull_request_event

KINDS = ("pr-opened", "pr-synchronize", "push", "label")


class WebhookKindError(ValueError):
    """The kind or its options do not make a webhook; the message says what to pass."""


@dataclass(frozen=True)
class ByHandWebhook:
    """One webhook to send, with the facts a person needs for the next step."""

    event: str
    payload: dict[str, Any]
    head_sha: str
    summary: str


def new_sha() -> str:
    """A fresh commit SHA: each push or PR update is a new commit."""
    return secrets.token_hex(20)


def webhook_for(
    kind: str,
    *,
    repo: str,
    number: int = 1,
    sha: str | None = None,
    label: str | None = None,
    branch: str = "main",
) -> ByHandWebhook:
    """Build the webhook `kind` names (one of `KINDS`)."""
    head_sha = (sha or new_sha()).lower()
    if kind == "push":
        payload = branch_push(branch, repo=repo, after=head_sha)
        return ByHandWebhook("push", payload, head_sha, f"push to {repo} {branch} ({head_sha[:7]})")
    if kind not in KINDS:
        raise WebhookKindError(f"{kind!r} is not one of {', '.join(KINDS)}")
    if kind == "label" and not label:
        raise WebhookKindError("label needs --label NAME (e.g. ciflow/crcr/gate)")
    action = {"pr-opened": "opened", "pr-synchronize": "synchronize", "label": "labeled"}[kind]
    extra: dict[str, Any] = {}
    if action == "synchronize":
        extra["before"] = new_sha()
    if action == "labeled":
        extra["label_name"] = label
    payload = pull_request_event(action, repo=repo, number=number, head_sha=head_sha, **extra)
    return ByHandWebhook(
        "pull_request", payload, head_sha, f"{repo}#{number} {action} ({head_sha[:7]})"
    )


def actions_env(
    repo: str,
    run_id: str,
    run_attempt: str,
    request_url: str,
    request_token: str,
    payload: dict[str, Any] | None,
) -> dict[str, str]:
    """The variables a GitHub Actions job on `repo` has, as far as `crcr report` reads them.

    With the last dispatch's `client_payload` (what the job's event would carry) in
    `CRCR_DISPATCH_PAYLOAD`, so a report by hand echoes it as a real job does.
    """
    variables = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_REPOSITORY": repo,
        "GITHUB_RUN_ID": run_id,
        "GITHUB_RUN_ATTEMPT": run_attempt,
        "GITHUB_WORKFLOW": "crcr",
        "GITHUB_JOB": "by-hand",
        "ACTIONS_ID_TOKEN_REQUEST_URL": request_url,
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN": request_token,
    }
    if payload is not None:
        variables["CRCR_DISPATCH_PAYLOAD"] = json.dumps(payload, separators=(",", ":"))
    return variables

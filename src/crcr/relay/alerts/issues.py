"""The upstream-issue alert sink (`CRCR_ALERT_ISSUES=true`, SPEC §13).

One issue on the upstream repository per failing backend, naming its oncalls, closed
(with a comment) once it recovers. Reached through the durable `alert-issues` retry
queue like the other sinks, so GitHub being down loses nothing.

Each queued item reconciles GitHub with the backend's *recorded* state rather than
replaying its own transition: items of one backend may be handled in any order, by any
instance, more than once, and still leave one open issue while the backend is failing
and none once it is not. The issue is found again by a hidden marker in its body, so a
worker that died between creating it and acknowledging the item does not open a second
one. An item handled before its own alert's state was recorded (the watch queues an
alert first) is retried shortly.

The repository name is the allowlist's (validated); the oncalls are only valid GitHub
logins, @-mentioned so GitHub notifies them once, when the issue is opened.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from crcr.github.client import GitHubClient
from crcr.github.errors import GitHubError, GitHubUnavailable
from crcr.relay.alerts.alert import BACKEND_STATE
from crcr.relay.alerts.metrics import ALERT_DELIVERIES
from crcr.relay.allowlist.model import Allowlist
from crcr.relay.checks.github_text import code, link, mentions, single_line
from crcr.relay.jobs.queue_handler import HandlerResult, QueueHandler
from crcr.stores.roles import Caches, RetryQueue
from crcr.stores.state import LeasedItem

log = logging.getLogger(__name__)

ISSUE_QUEUE = "alert-issues"
ISSUES = "issues"
LABEL = "crcr-alert"
FAILING = "failing"
STATE_NAMESPACE = "alert-state"
"""Where the alert watch records each state (`crcr.relay.alerts.watch`)."""


def issue_marker(repo: str) -> str:
    """The hidden line that identifies a backend's alert issue."""
    return f"<!-- crcr-alert-issue:{repo.lower()} -->"


def concerns_issues(body: Mapping[str, Any]) -> bool:
    """Whether an alert opens or closes an issue: a backend entering or leaving `failing`."""
    return body.get("kind") == BACKEND_STATE and FAILING in (body.get("from"), body.get("to"))


async def queue_issue(store: RetryQueue, alert_id: str, body: Mapping[str, Any]) -> None:
    """Queue the issue sink's item for an alert that concerns it (once per alert)."""
    if concerns_issues(body):
        await store.enqueue(ISSUE_QUEUE, f"{alert_id}:{ISSUES}", {"alert": dict(body)})


def issue_title(repo: str) -> str:
    """`[CRCR] <owner/repo> is failing`."""
    return f"[CRCR] {single_line(repo, limit=200)} is failing"


def issue_body(repo: str, alert: Mapping[str, Any], oncalls: tuple[str, ...]) -> str:
    """Why the issue is open, where to look, and the oncalls @-mentioned."""
    since = single_line(str(alert.get("at", "")), limit=40)
    url = alert.get("url")
    lines = [
        issue_marker(repo),
        f"The downstream backend {code(repo)} is **failing**: its last completed "
        f"default-branch or nightly jobs all failed (since {code(since)}).",
        "",
    ]
    if isinstance(url, str):  # only a validated web URL becomes a link (`link`)
        lines += [link("Its page on the HUD", url), ""]
    named = mentions(oncalls)
    lines.append(f"Oncalls: {named}" if named else "The allowlist names no oncalls for it.")
    lines += ["", "_Opened by crcr (`CRCR_ALERT_ISSUES`); closed by crcr when it recovers._"]
    return "\n".join(lines) + "\n"


def recovery_comment(repo: str, state: str, at: str) -> str:
    """The comment that closes the issue."""
    return (
        f"{code(repo)} recovered: it is {code(state)} again (since {code(at)}), "
        "so crcr closes this issue.\n"
    )


@dataclass
class IssueSink:
    """Open, find and close the alert issues on the upstream repository."""

    github: GitHubClient
    upstream_repo: str
    allowlist: Callable[[], Awaitable[Allowlist]]
    store: Caches

    async def find_open(self, repo: str) -> dict[str, Any] | None:
        """The backend's open alert issue, found by its marker; None if there is none."""
        params = {"state": "open", "labels": LABEL}
        issues = await self.github.repo_pages(self.upstream_repo, "/issues", params)
        marker = issue_marker(repo)
        for issue in issues:
            if "pull_request" not in issue and marker in str(issue.get("body") or ""):
                return issue
        return None

    async def reconcile(self, alert: Mapping[str, Any]) -> HandlerResult:
        """Bring the backend's issue in line with its recorded state."""
        repo = str(alert["repo"])
        state = await self.store.cache_get(STATE_NAMESPACE, f"{BACKEND_STATE}:{repo.lower()}")
        if state != alert.get("to") and state == alert.get("from"):
            return HandlerResult.RETRY  # the watch has not recorded this alert's state yet
        found = await self.find_open(repo)
        if state == FAILING and found is None:
            oncalls = (await self.allowlist()).oncalls(repo)
            await self.github.repo_request(
                "POST",
                self.upstream_repo,
                "/issues",
                json={
                    "title": issue_title(repo),
                    "body": issue_body(repo, alert, oncalls),
                    "labels": [LABEL],
                },
            )
            log.info("alert issue opened for %s", repo, extra={"repo": repo})
        elif state != FAILING and found is not None:
            number = int(found["number"])
            comment = recovery_comment(repo, str(state), str(alert.get("at", "")))
            await self.github.create_issue_comment(self.upstream_repo, number, comment)
            await self.github.repo_request(
                "PATCH",
                self.upstream_repo,
                f"/issues/{number}",
                json={"state": "closed", "state_reason": "completed"},
            )
            log.info("alert issue closed for %s", repo, extra={"repo": repo})
        return HandlerResult.DONE


def issue_queue_handler(sink: IssueSink) -> QueueHandler:
    """Handle one `alert-issues` item: GitHub down is retried, a refusal dropped."""

    async def handle(item: LeasedItem) -> HandlerResult:
        alert = item.payload.get("alert")
        if not isinstance(alert, Mapping) or not isinstance(alert.get("repo"), str):
            ALERT_DELIVERIES.labels(sink=ISSUES, result="dropped").inc()
            return HandlerResult.DROP
        try:
            result = await sink.reconcile(alert)
        except GitHubUnavailable as exc:
            log.warning("alert issue for %s not written: %s", alert["repo"], exc)
            result = HandlerResult.RETRY
        except GitHubError as exc:  # the App lacks `issues: write`, or GitHub refuses
            log.warning("GitHub refused the alert issue for %s: %s", alert["repo"], exc)
            result = HandlerResult.DROP
        outcome = {HandlerResult.DONE: "sent", HandlerResult.RETRY: "retried"}
        ALERT_DELIVERIES.labels(sink=ISSUES, result=outcome.get(result, "dropped")).inc()
        return result

    return handle

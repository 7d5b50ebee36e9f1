"""One dispatch to one downstream, asked by an operator (`crcr dispatch`, SPEC §12).

A new backend wants to see its workflow start and its first results reach the HUD
without waiting for a pull request upstream; a backend whose run was lost wants that
one run again. The upstream event is rebuilt from GitHub (the pull request as it is
now, or a push of one commit), routed by the same `route_event` as a webhook, and sent
through the same fan-out: pending dispatch record first, payload trimming, the retry
queue. So its callbacks bind to the record and show on the HUD like any other.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from crcr.github.client import GitHubClient
from crcr.github.errors import GitHubNotFound
from crcr.github.pull_requests import PullRequests
from crcr.relay.allowlist.model import Allowlist, Level
from crcr.relay.jobs.dispatch import UpstreamContext
from crcr.relay.webhook.client_payload import PayloadTooLarge, build_client_payload
from crcr.relay.webhook.events import Dispatch, route_event
from crcr.relay.webhook.fanout import DispatchOutcome, FanOut, Result, dispatch_to_downstreams

log = logging.getLogger(__name__)

DELIVERY_PREFIX = "manual-"
"""Marks a manual dispatch's delivery id, so the HUD and the logs tell it from a webhook's."""
PR_ACTION = "synchronize"
"""The action a manual pull-request dispatch carries: "run CI on the PR's head as it is"."""
ZERO_SHA = "0" * 40
FULL_SHA = re.compile(r"^[0-9a-fA-F]{40}$")


class DispatchRefused(Exception):
    """The dispatch cannot be sent; the message says why, for the operator."""


@dataclass(frozen=True)
class ManualDispatch:
    """What was sent: the delivery id to look for on the HUD, the context, the outcome."""

    delivery_id: str
    repo: str
    level: Level
    context: UpstreamContext
    outcome: DispatchOutcome
    trimmed: bool


@dataclass(frozen=True)
class UpstreamEvent:
    """A webhook-shaped event rebuilt from GitHub's API."""

    name: str
    payload: dict[str, Any]


async def pull_request_event(github: GitHubClient, upstream: str, number: int) -> UpstreamEvent:
    """The `pull_request` event GitHub would send for new commits on PR `number`."""
    try:
        pull = await PullRequests(github, upstream).get_pull(number)
    except GitHubNotFound:
        raise DispatchRefused(f"pull request #{number} not found in {upstream}") from None
    repository = (pull.get("base") or {}).get("repo") or await github.get_repo(upstream)
    payload = {
        "action": PR_ACTION,
        "number": number,
        "pull_request": pull,
        "repository": repository,
    }
    return UpstreamEvent("pull_request", payload)


async def push_event(github: GitHubClient, upstream: str, sha: str) -> UpstreamEvent:
    """A `push` event of commit `sha` to the upstream's default branch."""
    if not FULL_SHA.match(sha):
        raise DispatchRefused(f"--sha must be a full 40-character commit SHA, got {sha!r}")
    sha = sha.lower()
    if not await github.commit_exists(upstream, sha):
        raise DispatchRefused(f"commit {sha} not found in {upstream}")
    repository = await github.get_repo(upstream)
    payload = {
        "ref": f"refs/heads/{repository.get('default_branch') or 'main'}",
        "before": ZERO_SHA,
        "after": sha,
        "created": False,
        "deleted": False,
        "forced": False,
        "commits": [],
        "head_commit": {"id": sha},
        "repository": repository,
    }
    return UpstreamEvent("push", payload)


def target_entry(allowlist: Allowlist, repo: str, event: str) -> tuple[str, Level]:
    """The allowlist's spelling and level of `repo`, if it takes `event` dispatches."""
    entry = allowlist.entry(repo)
    if entry is None:
        raise DispatchRefused(
            f"{repo} is not on the allowlist: only allowlisted repos get dispatches"
        )
    if event == "pull_request" and "pull_request" not in entry.events:
        taken = ", ".join(sorted(entry.events))
        raise DispatchRefused(
            f"{entry.repo} ({entry.level}) takes part in {taken} only: "
            "its allowlist entry gets no pull_request dispatches (use --sha)"
        )
    return entry.repo, entry.level


async def send_manual_dispatch(
    *,
    fanout: FanOut,
    github: GitHubClient,
    allowlist: Callable[[], Awaitable[Allowlist]],
    upstream_repo: str,
    repo: str,
    pr_number: int | None = None,
    sha: str | None = None,
) -> ManualDispatch:
    """Send one dispatch for PR `pr_number` or commit `sha` to the allowlisted `repo`."""
    if (pr_number is None) == (sha is None):
        raise DispatchRefused("give exactly one of --pr and --sha")
    event_name = "pull_request" if pr_number is not None else "push"
    target, level = target_entry(await allowlist(), repo, event_name)
    if pr_number is not None:
        event = await pull_request_event(github, upstream_repo, pr_number)
    else:
        event = await push_event(github, upstream_repo, str(sha))
    context = _context_of(event, upstream_repo)
    delivery_id = f"{DELIVERY_PREFIX}{uuid.uuid4()}"
    try:
        client_payload = build_client_payload(event.name, delivery_id, event.payload)
    except PayloadTooLarge as exc:
        raise DispatchRefused(str(exc)) from None
    [outcome] = await dispatch_to_downstreams(
        fanout,
        delivery_id=delivery_id,
        context=context,
        client_payload=client_payload.value,
        trimmed=client_payload.trimmed,
        repos=[target],
    )
    log.info(
        "manual dispatch %s",
        outcome.result,
        extra={"delivery_id": delivery_id, "repo": target, "event": event.name},
    )
    return ManualDispatch(delivery_id, target, level, context, outcome, client_payload.trimmed)


def _context_of(event: UpstreamEvent, upstream_repo: str) -> UpstreamContext:
    """The context a webhook of this event would be dispatched with (`route_event`'s)."""
    decision = route_event(event.name, event.payload, upstream_repo=upstream_repo)
    if not isinstance(decision, Dispatch):
        reason = getattr(decision, "reason", decision)
        raise DispatchRefused(f"a webhook of this {event.name} would not be dispatched: {reason}")
    return decision.context


def describe(sent: ManualDispatch) -> list[str]:
    """What `crcr dispatch` prints: the delivery id first, then what happened."""
    context = sent.context
    what = f"PR #{context.pr_number}" if context.pr_number is not None else "push"
    lines = [
        f"delivery id: {sent.delivery_id}",
        f"{sent.repo} ({sent.level}): {sent.outcome.result} — {context.event_type} "
        f"for {what} at {context.head_sha}",
    ]
    if sent.outcome.error:
        lines.append(f"  error: {sent.outcome.error}")
    if sent.outcome.result is Result.FAILED and "(404)" in (sent.outcome.error or ""):
        lines.append(
            f"  the GitHub App is not installed on {sent.repo} (or cannot see it): "
            "install it there, then dispatch again"
        )
    elif sent.outcome.result is Result.QUEUED:
        lines.append("  GitHub did not take it for now: the sweeper sends it again (`crcr sweep`)")
    if sent.trimmed:
        lines.append("  the payload was trimmed to fit GitHub's 65,535-character cap")
    if sent.level < Level.L2:
        lines.append(
            f"  note: {sent.repo} is at L1, whose results are not recorded: its callbacks "
            "are answered but do not show on the HUD (L2 and above do)"
        )
    return lines

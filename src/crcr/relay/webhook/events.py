"""Webhook routing: which upstream events are dispatched, recorded or ignored (SPEC §4).

Pure: takes the event name and payload, returns a decision. The webhook endpoint acts
on it; nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from crcr.relay.jobs.dispatch import UpstreamContext

RELAYED_EVENTS = frozenset({"pull_request", "push", "check_run", "check_suite", "merge_group"})
DISPATCHED_PR_ACTIONS = frozenset({"opened", "synchronize", "reopened", "closed"})
DEVICE_LABEL_PREFIX = "ciflow/crcr/"


@dataclass(frozen=True)
class Ignore:
    """The event is acknowledged with 200 and nothing happens."""

    reason: str


@dataclass(frozen=True)
class Dispatch:
    """Fan the event out to every allowlisted downstream repo."""

    context: UpstreamContext


@dataclass(frozen=True)
class LabelDevice:
    """A `ciflow/crcr/<device>` label opts the PR's L3 backends for that device in."""

    context: UpstreamContext
    device: str


@dataclass(frozen=True)
class Rerequest:
    """A maintainer asked to re-run a check run or suite (handled with check runs)."""

    event: str


Decision = Ignore | Dispatch | LabelDevice | Rerequest


def route_event(
    event: str,
    payload: Mapping[str, Any],
    *,
    upstream_repo: str,
    push_branches: Sequence[str] = (),
) -> Decision:
    """Decide what to do with one webhook delivery."""
    if event not in RELAYED_EVENTS:
        return Ignore(f"event {event!r} is not relayed")
    full_name = str(_get(payload, "repository", "full_name") or "")
    if full_name.lower() != upstream_repo.lower():
        return Ignore(f"repository {full_name!r} is not the upstream {upstream_repo!r}")
    if event == "pull_request":
        return _route_pull_request(payload, upstream_repo)
    if event == "push":
        return _route_push(payload, upstream_repo, push_branches)
    if event == "merge_group":
        return _route_merge_group(payload, upstream_repo)
    if payload.get("action") in ("rerequested", "requested_action"):
        return Rerequest(event)  # a pressed check-run button too (SPEC §15)
    return Ignore(f"{event} action {payload.get('action')!r} is not relayed")


def _route_pull_request(payload: Mapping[str, Any], upstream_repo: str) -> Decision:
    action = payload.get("action")
    pr = payload.get("pull_request")
    if not isinstance(pr, Mapping):
        return Ignore("pull_request payload without a pull_request object")
    labels = tuple(
        str(label["name"])
        for label in pr.get("labels") or ()
        if isinstance(label, Mapping) and "name" in label
    )
    context = UpstreamContext(
        upstream_repo=upstream_repo,
        event_type="pull_request",
        head_sha=str(_get(pr, "head", "sha") or ""),
        pr_number=int(pr.get("number") or payload.get("number") or 0),
        labels=labels,
        action=str(action),
    )
    if action in DISPATCHED_PR_ACTIONS:
        return Dispatch(context)
    if action == "labeled":
        name = str(_get(payload, "label", "name") or "")
        device = name.removeprefix(DEVICE_LABEL_PREFIX)
        if name.startswith(DEVICE_LABEL_PREFIX) and device:
            return LabelDevice(context, device)
        return Ignore(f"label {name!r} is not a {DEVICE_LABEL_PREFIX}<device> label")
    return Ignore(f"pull_request action {action!r} is not relayed")


def _route_push(
    payload: Mapping[str, Any], upstream_repo: str, push_branches: Sequence[str]
) -> Decision:
    ref = str(payload.get("ref") or "")
    if not ref.startswith("refs/heads/"):
        return Ignore(f"push of {ref!r} is not a branch push")
    if payload.get("deleted"):
        return Ignore(f"push deletes {ref!r}")
    branch = ref.removeprefix("refs/heads/")
    default_branch = str(_get(payload, "repository", "default_branch") or "main")
    wanted = branch == default_branch or any(fnmatchcase(branch, p) for p in push_branches)
    if not wanted:
        return Ignore(f"push to {branch!r} is not relayed")
    return Dispatch(
        UpstreamContext(
            upstream_repo=upstream_repo,
            event_type="push",
            head_sha=str(payload.get("after") or ""),
            pr_number=None,
            action=None,
        )
    )


def _route_merge_group(payload: Mapping[str, Any], upstream_repo: str) -> Decision:
    """`checks_requested` is dispatched (to L4 backends, SPEC §15); the rest is not."""
    action = payload.get("action")
    head_sha = str(_get(payload, "merge_group", "head_sha") or "")
    if action != "checks_requested" or not head_sha:
        return Ignore(f"merge_group action {action!r} is not dispatched")
    return Dispatch(
        UpstreamContext(
            upstream_repo=upstream_repo,
            event_type="merge_group",
            head_sha=head_sha,
            pr_number=None,
            action=str(action),
        )
    )


def _get(mapping: Mapping[str, Any], *path: str) -> Any:
    """Follow `path` through nested mappings; None where it breaks."""
    node: Any = mapping
    for key in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node

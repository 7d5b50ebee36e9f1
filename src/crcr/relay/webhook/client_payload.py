"""Build the `client_payload` of a dispatch and fit it under GitHub's size cap.

GitHub rejects a `repository_dispatch` whose `client_payload` exceeds 65,535 characters
of JSON (422). Real `pull_request` payloads with long descriptions exceed that, so the
relay drops what downstream CI does not need, in stages from the least to the most
useful, and keeps the facts callbacks are bound to (head SHA, PR number, labels).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

GITHUB_CLIENT_PAYLOAD_LIMIT = 65_535
KEPT_URL_KEYS = frozenset({"html_url", "clone_url", "url"})
REPOSITORY_KEYS = ("id", "name", "full_name", "private", "html_url", "clone_url",
                   "default_branch", "owner")  # fmt: skip


class PayloadTooLarge(Exception):
    """Even the minimal payload does not fit GitHub's cap (a pathological event)."""


@dataclass(frozen=True)
class ClientPayload:
    """The dispatch body's `client_payload`, and whether fields were dropped to fit."""

    value: dict[str, Any]
    size: int
    trimmed: bool


def encoded_size(value: Any) -> int:
    """Characters of the compact JSON GitHub measures."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def build_client_payload(
    event_type: str,
    delivery_id: str,
    payload: Mapping[str, Any],
    *,
    limit: int = GITHUB_CLIENT_PAYLOAD_LIMIT,
) -> ClientPayload:
    """Wrap the webhook payload as SPEC §4 says, trimming it when it is too large."""
    stages: list[Callable[[Any], Any]] = [_drop_bulk, _drop_lists, _essentials]
    current: Any = payload
    trimmed = False
    while True:
        value = {"event_type": event_type, "delivery_id": delivery_id, "payload": current}
        size = encoded_size(value)
        if size <= limit:
            return ClientPayload(value=value, size=size, trimmed=trimmed)
        if not stages:
            raise PayloadTooLarge(f"client_payload is {size} characters even when minimal")
        current = stages.pop(0)(current)
        trimmed = True


def _drop_bulk(node: Any) -> Any:
    """Drop PR bodies, `_links`, API URL templates; shrink users to logins, repos to names."""
    if isinstance(node, list):
        return [_drop_bulk(item) for item in node]
    if not isinstance(node, Mapping):
        return node
    if "login" in node and ("avatar_url" in node or "node_id" in node):
        return {"login": node["login"]}
    if "full_name" in node and "owner" in node:
        node = {key: node[key] for key in REPOSITORY_KEYS if key in node}
    return {
        key: _drop_bulk(value)
        for key, value in node.items()
        if key not in ("_links", "body") and not (key.endswith("_url") and key not in KEPT_URL_KEYS)
    }


def _drop_lists(node: Any) -> Any:
    """Cut the long lists (push commits, reviewers, assignees) to what identifies them."""
    if not isinstance(node, Mapping):
        return node
    slim = dict(node)
    if isinstance(slim.get("commits"), list):
        slim["commits"] = [{"id": c.get("id")} for c in slim["commits"] if isinstance(c, Mapping)]
    for key in ("assignees", "requested_reviewers", "requested_teams"):
        slim.pop(key, None)
    pr = slim.get("pull_request")
    if isinstance(pr, Mapping):
        pr = dict(pr)
        for key in ("assignees", "requested_reviewers", "requested_teams", "milestone"):
            pr.pop(key, None)
        slim["pull_request"] = pr
    return slim


def _essentials(node: Any) -> Any:
    """Keep only what downstream CI and callback binding need."""
    if not isinstance(node, Mapping):
        return node
    pr = node.get("pull_request")
    essentials: dict[str, Any] = {
        key: node[key] for key in ("action", "number", "ref", "before", "after") if key in node
    }
    repository = node.get("repository")
    if isinstance(repository, Mapping):
        essentials["repository"] = {
            key: repository[key] for key in ("full_name", "default_branch") if key in repository
        }
    if isinstance(pr, Mapping):
        essentials["pull_request"] = {
            "number": pr.get("number"),
            "html_url": pr.get("html_url"),
            "head": _pick(pr.get("head"), "sha", "ref"),
            "base": _pick(pr.get("base"), "sha", "ref"),
            "labels": [
                {"name": label.get("name")}
                for label in pr.get("labels") or ()
                if isinstance(label, Mapping)
            ],
        }
    if isinstance(node.get("label"), Mapping):
        essentials["label"] = {"name": node["label"].get("name")}
    if isinstance(node.get("head_commit"), Mapping):
        essentials["head_commit"] = _pick(node["head_commit"], "id")
    return essentials


def _pick(node: Any, *keys: str) -> dict[str, Any]:
    if not isinstance(node, Mapping):
        return {}
    return {key: node.get(key) for key in keys}

"""Which upstream pushes change the allowlist, so that every instance re-reads it (SPEC §12).

A push to the upstream's default branch whose commits add, modify or remove the
allowlist file announces a change: the stamp in the state store moves and every
instance re-reads before its next callback decision. For a GitHub blob source the file
is known exactly (its repository must be the upstream, the only one whose webhooks
arrive); a file or URL source names no repository, so a pushed file with the same
name counts — at worst one needless re-read.
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from crcr.relay.allowlist.location import AllowlistLocation, FileLocation, GitHubBlobLocation
from crcr.relay.allowlist.source import AllowlistSource

log = logging.getLogger(__name__)

PushHook = Callable[[Mapping[str, Any]], Awaitable[bool]]
"""Given a verified `push` payload, announce an allowlist change if it is one."""


def pushed_paths(payload: Mapping[str, Any]) -> set[str]:
    """Every path a push's commits added, modified or removed."""
    paths: set[str] = set()
    commits = payload.get("commits")
    for commit in commits if isinstance(commits, list) else ():
        if not isinstance(commit, dict):
            continue
        for change in ("added", "modified", "removed"):
            files = commit.get(change)
            paths.update(
                f for f in (files if isinstance(files, list) else ()) if isinstance(f, str)
            )
    return paths


def touches_allowlist(
    payload: Mapping[str, Any], location: AllowlistLocation, upstream_repo: str
) -> bool:
    """Whether this push to the upstream's default branch changes the allowlist file."""
    repository = payload.get("repository")
    if not isinstance(repository, dict):
        return False
    if str(repository.get("full_name", "")).lower() != upstream_repo.lower():
        return False
    if payload.get("ref") != f"refs/heads/{repository.get('default_branch')}":
        return False
    paths = pushed_paths(payload)
    if isinstance(location, GitHubBlobLocation):
        return location.repo.lower() == upstream_repo.lower() and location.path in paths
    name = location.path.name if isinstance(location, FileLocation) else _url_name(str(location))
    return bool(name) and any(posixpath.basename(path) == name for path in paths)


def _url_name(url: str) -> str:
    return posixpath.basename(url.rstrip("/"))


def push_hook(source: AllowlistSource, upstream_repo: str) -> PushHook:
    """The webhook's hook: announce the change (and re-read here) when a push makes one."""

    async def on_push(payload: Mapping[str, Any]) -> bool:
        if not touches_allowlist(payload, source.location, upstream_repo):
            return False
        log.info("push %s changes the allowlist", payload.get("after"))
        await source.announce_change("push")
        return True

    return on_push

"""`paths` / `paths_ignore` (SPEC §15): a PR that touches none of a backend's files is
not dispatched to it.

Globs as GitHub Actions reads them: `*` stays within one path segment, `**` crosses
segments, `?` is one character. A file counts when it matches `paths` (or there are
none) and no `paths_ignore`; the backend is dispatched to when any file counts. When
the files cannot be known (GitHub unreachable, or the PR has more than the 3,000 files
GitHub lists), the backend is dispatched to: a doubt never costs a backend its run.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from functools import cache

from crcr.github.client import GitHubClient
from crcr.relay.allowlist.budget_fields import EntryBudget

log = logging.getLogger(__name__)

GITHUB_FILES_LIMIT = 3000
"""GitHub lists the first 3,000 files of a pull request and no more."""

SKIPPED_NO_PATHS = "skipped: no matching paths"
"""What the HUD PR view says of a backend a PR was not dispatched to."""


@cache
def glob_pattern(glob: str) -> re.Pattern[str]:
    """The regular expression of one Actions-style glob."""
    out: list[str] = []
    i = 0
    while i < len(glob):
        char = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if glob.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        out.append({"*": "[^/]*", "?": "[^/]"}.get(char, re.escape(char)))
        i += 1
    return re.compile("".join(out))


def _any_match(path: str, globs: Iterable[str]) -> bool:
    return any(glob_pattern(glob).fullmatch(path) for glob in globs)


def wants_files(budget: EntryBudget, files: Sequence[str]) -> bool:
    """Whether a PR changing `files` is dispatched to an entry with this budget."""
    if not budget.filters_paths:
        return True
    for path in files:
        if budget.paths and not _any_match(path, budget.paths):
            continue
        if _any_match(path, budget.paths_ignore):
            continue
        return True
    return False


async def changed_files(github: GitHubClient, upstream: str, number: int) -> list[str] | None:
    """The PR's changed files, or None when they cannot be known in full."""
    try:
        entries = await github.repo_pages(upstream, f"/pulls/{number}/files", {})
    except Exception as exc:  # judged as "unknown": the backend is dispatched to
        log.warning(
            "could not list the files of %s#%d (dispatching to path-filtered backends): %s",
            upstream,
            number,
            exc,
        )
        return None
    if len(entries) >= GITHUB_FILES_LIMIT:
        return None
    return [str(entry.get("filename", "")) for entry in entries]

"""The upstream commits between a good and a bad push, from GitHub's compare API.

`GET /repos/{upstream}/compare/{good}...{bad}` lists every commit reachable from `bad`
and not from `good`, oldest first, paginated (`per_page` ≤ 100, `Link: rel="next"`).
A merged branch brings its own commits into that list, but only the default branch's
first-parent line was ever pushed and tested there: the range is that line alone,
walked from `bad` through each commit's first parent back to `good`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from crcr.github.client import GitHubClient
from crcr.relay.culprits.record import Commit

PER_PAGE = 100
MAX_PAGES = 30
"""3,000 commits: far more than a day of upstream merges (GitHub's own cap is 10,000)."""


class RangeUnknown(Exception):
    """GitHub could not say which commits lie between the two; the message says why."""


async def compare_commits(
    github: GitHubClient, upstream: str, good: str, bad: str
) -> list[dict[str, Any]]:
    """Every commit object the compare API lists for `good...bad`, across its pages."""
    basehead = quote(f"{good}...{bad}", safe=".")
    found: list[dict[str, Any]] = []
    for page in range(1, MAX_PAGES + 1):
        response = await github.repo_request(
            "GET",
            upstream,
            f"/compare/{basehead}",
            params={"per_page": str(PER_PAGE), "page": str(page)},
        )
        body = response.json()
        commits = body.get("commits") if isinstance(body, Mapping) else None
        if not isinstance(commits, list):
            raise RangeUnknown(f"the compare of {good}...{bad} carried no commit list")
        found.extend(dict(c) for c in commits if isinstance(c, Mapping))
        if not response.links.get("next"):
            return found
    return found


def first_parent_line(commits: Sequence[Mapping[str, Any]], good: str, bad: str) -> list[Commit]:
    """The commits from just after `good` to `bad` on `bad`'s first-parent line, oldest first."""
    by_sha = {str(c.get("sha", "")).lower(): c for c in commits}
    line: list[Commit] = []
    sha: str | None = bad.lower()
    while sha is not None and sha != good.lower() and sha in by_sha:
        commit = by_sha[sha]
        message = str((commit.get("commit") or {}).get("message") or "")
        line.append(Commit(sha, message.split("\n", 1)[0][:200]))
        parents = commit.get("parents") or []
        sha = str(parents[0].get("sha", "")).lower() if parents else None
    if not line or line[0].sha != bad.lower():
        raise RangeUnknown(f"{bad} is not among the commits after {good}")
    line.reverse()
    return line


async def commit_range(github: GitHubClient, upstream: str, good: str, bad: str) -> list[Commit]:
    """The range a bisection searches: `good`'s successors up to `bad`, first parents only."""
    return first_parent_line(await compare_commits(github, upstream, good, bad), good, bad)

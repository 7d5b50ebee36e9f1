"""The sandbox upstream's push history: commits landing on the default branch in order.

Each commit gets its parents (a merge commit two: the branch before it, then the merged
branch's tip), a squash-merge title naming its pull request (`Title (#123)`, GitHub's
form), and the tree of the commit before it, so the compare API can walk the history
exactly as GitHub's would. Callers hold no lock: these take the sandbox's own.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

from crcr.sandbox.github_git import branch_files, head_of
from crcr.sandbox.github_model import Repo
from crcr.sandbox.github_state import SandboxGitHub


def land_commit(
    github: SandboxGitHub,
    full_name: str,
    title: str,
    *,
    pr_number: int | None = None,
    merged: Sequence[str] = (),
    sha: str | None = None,
) -> str:
    """Land one commit on `full_name`'s default branch; its SHA (`sha`, or a new one).

    `pr_number` makes it a squash merge of that pull request; `merged` names the tips of
    branches it merges (a merge commit), which become its second and later parents.
    """
    repo = github.add_repo(full_name)
    with github.lock:
        return _land(repo, title, pr_number, tuple(merged), github.clock(), sha)


def _land(
    repo: Repo,
    title: str,
    pr_number: int | None,
    merged: tuple[str, ...],
    now: float,
    sha: str | None = None,
) -> str:
    branch = repo.default_branch
    parent = head_of(repo, branch, now)
    sha = (sha or secrets.token_hex(20)).lower()
    message = f"{title} (#{pr_number})" if pr_number is not None else title
    parents = [p for p in (parent, *merged) if p is not None]
    repo.trees[sha] = branch_files(repo, branch)
    repo.parents[sha] = parent
    repo.commits[sha] = {"message": message, "timestamp": now, "parents": parents}
    repo.refs[branch] = sha
    return sha


def side_commit(github: SandboxGitHub, full_name: str, title: str, *, parent: str) -> str:
    """A commit on a branch that is not the default one (to be merged later)."""
    repo = github.add_repo(full_name)
    with github.lock:
        sha = secrets.token_hex(20)
        repo.trees[sha] = dict(repo.trees.get(parent, {}))
        repo.parents[sha] = parent
        repo.commits[sha] = {"message": title, "timestamp": github.clock(), "parents": [parent]}
        return sha


def parents_of(repo: Repo, sha: str) -> list[str]:
    """Every parent of `sha`, first parent first."""
    recorded = repo.commits.get(sha, {}).get("parents")
    if isinstance(recorded, list):
        return [str(p) for p in recorded]
    parent = repo.parents.get(sha)
    return [parent] if parent else []


def ancestors(repo: Repo, sha: str) -> set[str]:
    """`sha` and every commit reachable from it through parents."""
    seen: set[str] = set()
    todo = [sha]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        todo.extend(parents_of(repo, current))
    return seen

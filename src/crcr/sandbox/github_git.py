"""The sandbox's git model: branches as refs to commits, each commit a snapshot of files.

Files are kept per branch in `Repo.files` (what the contents API reads and tests set
with `add_file`); a branch's commit is minted lazily, the first time something asks for
its head after its files changed, so tests that only add files need know nothing of
commits. Callers hold the sandbox's lock.
"""

from __future__ import annotations

import secrets

from crcr.sandbox.github_model import ApiError, Repo


def branch_files(repo: Repo, branch: str) -> dict[str, bytes]:
    """The files on `branch`, by path."""
    return {path: data for (ref, path), data in repo.files.items() if ref == branch}


def _mint(repo: Repo, branch: str, message: str, now: float) -> str:
    sha = secrets.token_hex(20)
    repo.trees[sha] = branch_files(repo, branch)
    repo.parents[sha] = repo.refs.get(branch)
    repo.commits[sha] = {"message": message, "timestamp": now}
    repo.refs[branch] = sha
    return sha


def head_of(repo: Repo, branch: str, now: float) -> str | None:
    """The commit at the tip of `branch`, or None when the branch does not exist."""
    files = branch_files(repo, branch)
    current = repo.refs.get(branch)
    if current is None and not files:
        return None
    if current is not None and repo.trees.get(current) == files:
        return current
    return _mint(repo, branch, "Sandbox files", now)


def set_branch(repo: Repo, branch: str, sha: str) -> None:
    """Point `branch` at commit `sha`; its files become that commit's."""
    tree = repo.trees.get(sha)
    if tree is None:
        raise ApiError(422, "Object does not exist")
    delete_branch(repo, branch)
    repo.refs[branch] = sha
    for path, data in tree.items():
        repo.files[(branch, path)] = data


def delete_branch(repo: Repo, branch: str) -> None:
    """Forget `branch` and its files (commits stay, as in git)."""
    repo.refs.pop(branch, None)
    for key in [key for key in repo.files if key[0] == branch]:
        del repo.files[key]


def is_ancestor(repo: Repo, ancestor: str, sha: str | None) -> bool:
    """Whether `ancestor` is `sha` or one of its parents (a fast-forward's test)."""
    while sha is not None:
        if sha == ancestor:
            return True
        sha = repo.parents.get(sha)
    return False


def commit_file(repo: Repo, branch: str, path: str, data: bytes, message: str, now: float) -> str:
    """Commit `data` as `path` on `branch`; the new commit's SHA."""
    head_of(repo, branch, now)
    repo.files[(branch, path)] = data
    return _mint(repo, branch, message, now)

"""What the find box's query names: a pull request, a commit (SHA or prefix), a backend.

The query is read generously, as people paste things: `123`, `#123`, a GitHub pull or
commit URL, a SHA prefix of 4 to 40 characters, `owner/repo` or any part of a backend's name.
Every reading is looked up and every hit is returned, so the caller can go straight to
a single match and list several. All lookups use indexes: the PR index, the
(backend, head SHA) index once per backend (a handful of rows), and the backends table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import Connection, Engine, select

from crcr.hud.models import BACKENDS, JOBS

MIN_SHA_PREFIX = 4
MAX_MATCHES = 20
MAX_QUERY = 200
_PULL_URL = re.compile(r"/pull/(\d+)")
_COMMIT_URL = re.compile(r"/commit/([0-9a-fA-F]{4,40})")
_SHA = re.compile(rf"[0-9a-f]{{{MIN_SHA_PREFIX},40}}")

Kind = Literal["pr", "commit", "backend"]


@dataclass(frozen=True)
class FindMatch:
    """One thing the query names. `pr_number` is set for PRs and for commits of a PR;
    `repo` for backends and for commits pushed to the default branch (no PR)."""

    kind: Kind
    label: str
    pr_number: int | None = None
    head_sha: str | None = None
    repo: str | None = None


@dataclass(frozen=True)
class FindResult:
    """Every match of `query` (at most `MAX_MATCHES`), PRs first, then commits, backends."""

    query: str
    matches: tuple[FindMatch, ...]


def _readings(query: str) -> tuple[int | None, str | None, str]:
    """The PR number, SHA prefix and backend text the query may mean."""
    text = query.strip()
    pull, commit = _PULL_URL.search(text), _COMMIT_URL.search(text)
    if pull:
        return int(pull.group(1)), None, ""
    if commit:
        return None, commit.group(1).lower(), ""
    bare = text.removeprefix("#")
    number = int(bare) if bare.isdigit() and 0 < len(bare) <= 9 and int(bare) > 0 else None
    sha = bare.lower() if _SHA.fullmatch(bare.lower()) else None
    return number, sha, text.lower()


def _prs(connection: Connection, number: int) -> list[FindMatch]:
    hit = connection.execute(select(JOBS.c.id).where(JOBS.c.pr_number == number).limit(1)).first()
    return [] if hit is None else [FindMatch("pr", f"PR #{number}", pr_number=number)]


def _commits(connection: Connection, repos: list[str], prefix: str) -> list[FindMatch]:
    """Commits whose SHA starts with `prefix`: one index range per backend."""
    # Hex digits sort below "g", so [prefix, prefix + "g") is exactly the prefix's range.
    found: dict[tuple[int, str, str], None] = {}
    for repo in repos:
        rows = connection.execute(
            select(JOBS.c.pr_number, JOBS.c.head_sha)
            .where(
                JOBS.c.downstream_repo == repo,
                JOBS.c.head_sha >= prefix,
                JOBS.c.head_sha < prefix + "g",
            )
            .distinct()
            .limit(MAX_MATCHES)
        )
        for pr_number, sha in rows:
            # A PR's commit is shown on its PR page, whichever backends ran it.
            found[(pr_number, sha, "" if pr_number else repo)] = None
    matches = []
    for pr_number, sha, repo in sorted(found):
        if pr_number:
            label = f"commit {sha[:12]} of PR #{pr_number}"
            matches.append(FindMatch("commit", label, pr_number=pr_number, head_sha=sha))
        else:
            label = f"commit {sha[:12]} pushed, tested by {repo}"
            matches.append(FindMatch("commit", label, head_sha=sha, repo=repo))
    return matches


def _backends(repos: list[str], text: str) -> list[FindMatch]:
    exact = [repo for repo in repos if repo.lower() == text]
    named = exact or [repo for repo in repos if text and text in repo.lower()]
    return [FindMatch("backend", repo, repo=repo) for repo in named]


def read_find(engine: Engine, query: str) -> FindResult:
    """Everything `query` may name, PRs first; empty when nothing matches."""
    number, sha, text = _readings(query[:MAX_QUERY])
    with engine.connect() as connection:
        repos = list(connection.scalars(select(BACKENDS.c.repo).order_by(BACKENDS.c.repo)))
        matches = [
            *(_prs(connection, number) if number is not None else []),
            *(_commits(connection, repos, sha) if sha is not None else []),
            *_backends(repos, text),
        ]
    return FindResult(query=query, matches=tuple(matches[:MAX_MATCHES]))

"""A bisection as people read it: SPEC §14's JSON shape, and the CLI's lines; pure."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from crcr.relay.culprits.record import Bisection
from crcr.stores.roles import Bisections


def readable(raw: Mapping[str, Any]) -> bool:
    """Whether this release can read a stored bisection (one written by a newer may not)."""
    try:
        Bisection.from_store(raw)
    except (KeyError, TypeError, ValueError):
        return False
    return True


def culprit_json(bisection: Bisection, now: float) -> dict[str, Any]:
    """One entry of `GET /api/crcr/culprits` (SPEC §14 "Shapes")."""
    return {
        "repo": bisection.repo,
        "good": bisection.good,
        "bad": bisection.bad,
        "verdict": str(bisection.verdict),
        "culprit": bisection.culprit,
        "confirmed": bisection.confirmed,
        "dispatches": len(bisection.steps),
        "duration_s": bisection.duration(now),
        "steps": [{"sha": step.sha, "conclusion": step.conclusion} for step in bisection.steps],
    }


def newest_first(bisections: Sequence[Bisection], repo: str | None = None) -> list[Bisection]:
    """The bisections (of `repo` alone, when given), newest first."""
    chosen = [b for b in bisections if repo is None or b.repo.lower() == repo.lower()]
    return sorted(chosen, key=lambda b: b.started_at, reverse=True)


def describe(bisection: Bisection, now: float) -> list[str]:
    """What `crcr culprits` prints for one bisection."""
    head = (
        f"{bisection.repo}: {bisection.verdict} — {len(bisection.commits)} commit(s) "
        f"{bisection.good[:12]}...{bisection.bad[:12]}, {len(bisection.steps)} dispatch(es), "
        f"{bisection.duration(now):.0f} s"
    )
    lines = [head]
    commit = bisection.culprit_commit
    if commit is not None:
        sure = "confirmed" if bisection.confirmed else "not yet confirmed"
        lines.append(f"  culprit: {commit.sha} {commit.title} — {sure}")
    if bisection.reason:
        lines.append(f"  why: {bisection.reason}")
    for step in bisection.steps:
        ended = step.conclusion or "waiting"
        lines.append(f"  step {step.number} ({step.purpose}): {step.sha[:12]} → {ended}")
    return lines


def culprit_view(bisection: Bisection, now: float) -> dict[str, Any]:
    """What the backend page's "Who broke main" section draws of one bisection."""
    commit = bisection.culprit_commit
    titles = {c.sha: c.title for c in bisection.commits}
    return {
        **culprit_json(bisection, now),
        "origin": bisection.origin,
        "reason": bisection.reason,
        "commits": len(bisection.commits),
        "culprit_title": commit.title if commit is not None else "",
        "pr_number": commit.pr_number if commit is not None else None,
        "steps": [
            {
                "number": step.number,
                "sha": step.sha,
                "title": titles.get(step.sha, ""),
                "purpose": str(step.purpose),
                "sent_at": datetime.fromtimestamp(step.sent_at, UTC),
                "conclusion": step.conclusion,
            }
            for step in bisection.steps
        ],
    }


def culprit_lookup(
    store: Callable[[], Bisections], clock: Callable[[], float] = time.time
) -> Callable[[str], Awaitable[list[dict[str, Any]]]]:
    """The backend page's source of its bisections (`hud.web` knows nothing of the relay)."""

    async def lookup(repo: str) -> list[dict[str, Any]]:
        raws = (await store().bisections()).values()
        found = [Bisection.from_store(raw) for raw in raws if readable(raw)]
        now = clock()
        return [culprit_view(b, now) for b in newest_first(found, repo)]

    return lookup

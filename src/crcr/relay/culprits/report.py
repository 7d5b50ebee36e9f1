"""A bisection as people read it: SPEC §14's JSON shape, and the CLI's lines; pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from crcr.relay.culprits.record import Bisection


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

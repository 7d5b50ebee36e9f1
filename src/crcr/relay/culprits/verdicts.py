"""Read a push's or a dispatch's verdict from its job rows, and where the branch broke; pure.

A commit fails for a backend when any of its jobs failed, and passes when every job it
reported passed and none is still running. The range to bisect runs from the newest
passing push to the oldest push of the failing streak that followed it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from crcr.hud.reads.culprits import JobResult
from crcr.relay.culprits.search import FAILED, PASSED


@dataclass(frozen=True)
class BrokenRange:
    """The last good and the first bad upstream commit of a backend's default branch."""

    good: str
    bad: str


def verdict_of(jobs: Sequence[JobResult]) -> str | None:
    """`failure`, `success`, another conclusion (no verdict), or None while undecided."""
    if any(job.conclusion in FAILED for job in jobs):
        return "failure"
    if not jobs or any(job.status != "completed" for job in jobs):
        return None
    if all(job.conclusion in PASSED for job in jobs):
        return "success"
    return next(str(job.conclusion) for job in jobs if job.conclusion not in PASSED)


def push_verdicts(results: Sequence[JobResult]) -> list[tuple[str, str]]:
    """(head SHA, `success`/`failure`) per pushed commit, newest first; no verdict skipped."""
    order: list[str] = []
    by_sha: dict[str, list[JobResult]] = {}
    for result in results:
        sha = result.head_sha.lower()
        if sha not in by_sha:
            order.append(sha)
        by_sha.setdefault(sha, []).append(result)
    verdicts = [(sha, verdict_of(by_sha[sha])) for sha in order]
    return [(sha, v) for sha, v in verdicts if v in ("success", "failure")]


def broken_range(results: Sequence[JobResult]) -> BrokenRange | None:
    """Where the default branch broke: None while it passes, or with no good push known."""
    bad: str | None = None
    for sha, verdict in push_verdicts(results):
        if verdict == "success":
            return None if bad is None else BrokenRange(sha, bad)
        bad = sha
    return None

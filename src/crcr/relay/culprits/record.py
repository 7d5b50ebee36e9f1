"""A bisection as a value: its range, commits, steps and verdict, as the state store keeps it.

One record per (backend, good, bad) range: that key is what makes two instances (or two
leaders in turn) run one bisection, never two. Every change is a compare-and-set on
`version`, so a leader that lost its lock mid-pass cannot overwrite its successor's work.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

BISECT_EVENT = "crcr_bisect"
PR_IN_TITLE = re.compile(r"\(#(\d+)\)\s*$|^Merge pull request #(\d+)\b")
"""A squash merge's `Title (#123)` or a merge commit's `Merge pull request #123 from …`."""


class Verdict(StrEnum):
    """Where a bisection stands (SPEC §14 `verdict`)."""

    RUNNING = "running"
    CONFIRMED = "confirmed"
    INCONCLUSIVE = "inconclusive"
    RESOLVED = "resolved"


class Purpose(StrEnum):
    """Why a step was dispatched: to split the range, or to re-test the culprit once."""

    BISECT = "bisect"
    CONFIRM = "confirm"


@dataclass(frozen=True)
class Commit:
    """One upstream commit of the range, oldest first; the last is the first bad one."""

    sha: str
    title: str = ""

    @property
    def pr_number(self) -> int | None:
        """The merged pull request the commit's title names, if it names one."""
        found = PR_IN_TITLE.search(self.title)
        if found is None:
            return None
        return int(found.group(1) or found.group(2))


@dataclass(frozen=True)
class Step:
    """One `crcr_bisect` dispatch: which commit, why, and how it ended (None: waiting)."""

    number: int
    index: int
    sha: str
    delivery_id: str
    purpose: Purpose
    sent_at: float
    conclusion: str | None = None


@dataclass(frozen=True)
class Bisection:
    """One backend's hunt for the first bad commit between `good` and `bad`."""

    repo: str
    good: str
    bad: str
    commits: tuple[Commit, ...]
    started_at: float
    origin: str = "failing"
    verdict: Verdict = Verdict.RUNNING
    culprit: str | None = None
    confirmed: bool = False
    steps: tuple[Step, ...] = ()
    ended_at: float | None = None
    reason: str | None = None
    version: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """The store key: one bisection per (backend, good, bad)."""
        return bisection_key(self.repo, self.good, self.bad)

    @property
    def running(self) -> bool:
        """Still dispatching or waiting for results."""
        return self.verdict is Verdict.RUNNING

    @property
    def culprit_commit(self) -> Commit | None:
        """The culprit's commit in the range, when one is named."""
        return next((c for c in self.commits if c.sha == self.culprit), None)

    @property
    def waiting(self) -> tuple[Step, ...]:
        """The steps dispatched whose result has not come."""
        return tuple(step for step in self.steps if step.conclusion is None)

    def duration(self, now: float) -> float:
        """Seconds from start to verdict (or to `now`, while running)."""
        end = self.ended_at if self.ended_at is not None else now
        return round(max(end - self.started_at, 0.0), 3)

    def with_steps(self, steps: tuple[Step, ...]) -> Bisection:
        """A copy with these steps."""
        return replace(self, steps=steps)

    def ended(self, verdict: Verdict, at: float, **changes: Any) -> Bisection:
        """A copy that ends with `verdict` at `at`."""
        return replace(self, verdict=verdict, ended_at=at, **changes)

    def to_store(self) -> dict[str, Any]:
        """The JSON-able mapping the state store keeps."""
        return {
            "repo": self.repo,
            "good": self.good,
            "bad": self.bad,
            "commits": [[c.sha, c.title] for c in self.commits],
            "started_at": self.started_at,
            "origin": self.origin,
            "verdict": str(self.verdict),
            "culprit": self.culprit,
            "confirmed": self.confirmed,
            "steps": [
                {
                    "number": s.number,
                    "index": s.index,
                    "sha": s.sha,
                    "delivery_id": s.delivery_id,
                    "purpose": str(s.purpose),
                    "sent_at": s.sent_at,
                    "conclusion": s.conclusion,
                }
                for s in self.steps
            ],
            "ended_at": self.ended_at,
            "reason": self.reason,
            "version": self.version,
            "extra": dict(self.extra),
        }

    @classmethod
    def from_store(cls, raw: Mapping[str, Any]) -> Bisection:
        """Rebuild from the state store's mapping."""
        steps = tuple(
            Step(
                number=int(s["number"]),
                index=int(s["index"]),
                sha=str(s["sha"]),
                delivery_id=str(s["delivery_id"]),
                purpose=Purpose(s["purpose"]),
                sent_at=float(s["sent_at"]),
                conclusion=s.get("conclusion"),
            )
            for s in raw.get("steps") or ()
        )
        return cls(
            repo=str(raw["repo"]),
            good=str(raw["good"]),
            bad=str(raw["bad"]),
            commits=tuple(Commit(str(sha), str(title)) for sha, title in raw["commits"]),
            started_at=float(raw["started_at"]),
            origin=str(raw.get("origin") or "failing"),
            verdict=Verdict(raw["verdict"]),
            culprit=raw.get("culprit"),
            confirmed=bool(raw.get("confirmed")),
            steps=steps,
            ended_at=None if raw.get("ended_at") is None else float(raw["ended_at"]),
            reason=raw.get("reason"),
            version=int(raw.get("version") or 0),
            extra=dict(raw.get("extra") or {}),
        )


def bisection_key(repo: str, good: str, bad: str) -> str:
    """`owner/repo:good...bad`, lower-cased: the same range names the same bisection."""
    return f"{repo.lower()}:{good.lower()}...{bad.lower()}"

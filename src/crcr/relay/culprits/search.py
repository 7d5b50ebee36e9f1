"""The bisection's next move, pure: from the results so far, what to dispatch or conclude.

The range is `commits[0..n-1]`, oldest first; the commit before `commits[0]` (`good`)
passed and `commits[n-1]` (`bad`) failed on the default branch, so the first bad commit
lies in the range. Each result narrows `(lo, hi)` — the last index known good (-1 for
`good` itself) and the first known bad — until they are neighbours: `commits[hi]` is
the culprit, found in ⌈log2 n⌉ dispatches. One re-test of the culprit then confirms it.

Flakiness shows as disagreement: a pass at or after a known failure, or a re-test that
passes. Either ends the bisection `inconclusive` rather than naming a wrong culprit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from crcr.relay.culprits.record import Purpose, Step, Verdict

PASSED = frozenset({"success"})
FAILED = frozenset({"failure", "timed_out"})


@dataclass(frozen=True)
class Plan:
    """What to do now: the verdict (running while undecided), the culprit, what to send."""

    verdict: Verdict
    culprit_index: int | None = None
    dispatch: tuple[int, ...] = ()
    purpose: Purpose = Purpose.BISECT
    reason: str | None = None


def bounds(count: int, steps: Sequence[Step]) -> tuple[int, int] | str:
    """`(lo, hi)` from the bisect steps' results, or why they contradict each other."""
    lo, hi = -1, count - 1
    for step in steps:
        if step.purpose is not Purpose.BISECT:
            continue
        if step.conclusion in PASSED:
            lo = max(lo, step.index)
        elif step.conclusion in FAILED:
            hi = min(hi, step.index)
    if lo >= hi:
        return f"results disagree: commit {lo + 1} of {count} passed at or after a failure"
    return lo, hi


def split_points(lo: int, hi: int, parallel: int) -> list[int]:
    """The indices that cut `(lo, hi)` into `parallel + 1` near-equal parts (1: the middle)."""
    width = hi - lo
    points = {lo + (j * width) // (parallel + 1) for j in range(1, parallel + 1)}
    return sorted(point for point in points if lo < point < hi)


def plan(count: int, steps: Sequence[Step], parallel: int) -> Plan:
    """The next move of a bisection over `count` commits, given its steps so far."""
    unfinished = [
        s for s in steps if s.conclusion is not None and s.conclusion not in PASSED | FAILED
    ]
    if unfinished:
        step = unfinished[0]
        return Plan(
            Verdict.INCONCLUSIVE, reason=f"step {step.number} ended {step.conclusion}, no verdict"
        )
    found = bounds(count, steps)
    if isinstance(found, str):
        return Plan(Verdict.INCONCLUSIVE, reason=found)
    lo, hi = found
    if hi - lo == 1:
        return _confirm(hi, count, steps)
    waiting = {s.index for s in steps if s.conclusion is None and lo < s.index < hi}
    tested = {s.index for s in steps if s.purpose is Purpose.BISECT}
    room = parallel - len(waiting)
    if room <= 0:
        return Plan(Verdict.RUNNING)
    fresh = [i for i in split_points(lo, hi, parallel) if i not in tested]
    if not fresh and not waiting:  # a narrow range: any untested commit inside it will do
        fresh = [i for i in range(lo + 1, hi) if i not in tested][:1]
    return Plan(Verdict.RUNNING, dispatch=tuple(fresh[:room]))


def _confirm(culprit: int, count: int, steps: Sequence[Step]) -> Plan:
    """The culprit is named: re-test it once, and judge the re-test."""
    if count == 1:  # the range is the bad commit alone: nothing to split, nothing to doubt
        return Plan(Verdict.CONFIRMED, culprit_index=culprit)
    retests = [s for s in steps if s.purpose is Purpose.CONFIRM and s.index == culprit]
    if not retests:
        return Plan(
            Verdict.RUNNING, culprit_index=culprit, dispatch=(culprit,), purpose=Purpose.CONFIRM
        )
    conclusion = retests[0].conclusion
    if conclusion is None:
        return Plan(Verdict.RUNNING, culprit_index=culprit)
    if conclusion in FAILED:
        return Plan(Verdict.CONFIRMED, culprit_index=culprit)
    return Plan(
        Verdict.INCONCLUSIVE,
        culprit_index=culprit,
        reason=f"the culprit's re-test ended {conclusion}: the backend is flaky here",
    )

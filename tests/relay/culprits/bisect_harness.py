"""A relay over the sandbox whose upstream has a push history and whose L3 backend broke.

The backend's CI is played here: `answer` reports every `crcr_bisect` dispatch it has
not answered yet through the real callback endpoint (OIDC token, binding to the
dispatch record, the job state machine), failing at and after the culprit's commit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.relay.checks_harness import L3_REPO, L4_REPO, UPSTREAM, World

from crcr.relay.culprits.finder import CulpritFinder
from crcr.relay.culprits.record import BISECT_EVENT
from crcr.sandbox.github_history import land_commit

BROKEN = L3_REPO
HEALTHY = L4_REPO


@dataclass
class History:
    """The upstream's commits: `good` then `commits` (oldest first); `bad` is the last."""

    good: str
    commits: list[str]

    @property
    def bad(self) -> str:
        return self.commits[-1]


def land_history(world: World, count: int) -> History:
    """Land a good commit, then `count` more, each the squash merge of PR 500 + n."""
    good = land_commit(world.sandbox, UPSTREAM, "Base", pr_number=500)
    commits = [
        land_commit(world.sandbox, UPSTREAM, f"Change {n}", pr_number=500 + n)
        for n in range(1, count + 1)
    ]
    return History(good, commits)


async def push_and_report(world: World, sha: str, results: dict[str, str]) -> None:
    """Push `sha` upstream; each backend in `results` reports one job with its conclusion."""
    delivery = await world.push(sha)
    for repo, conclusion in results.items():
        for status, concluded in (("in_progress", None), ("completed", conclusion)):
            answer = await world.report(
                repo, delivery, status, concluded, run_id=abs(hash(sha)) % 10**9
            )
            assert answer.status_code == 200, answer.text


async def broken_between(world: World, history: History) -> None:
    """Main passed at `good` on both backends; at `bad` the broken one fails."""
    await push_and_report(world, history.good, {BROKEN: "success", HEALTHY: "success"})
    await push_and_report(world, history.bad, {BROKEN: "failure", HEALTHY: "success"})


def bisect_dispatches(world: World, repo: str | None = None) -> list[dict[str, Any]]:
    """Every `crcr_bisect` client payload the sandbox received (for `repo`, if named)."""
    return [
        d.client_payload for d in world.sandbox.dispatches(repo) if d.event_type == BISECT_EVENT
    ]


@dataclass
class BackendCI:
    """The broken backend's CI: fails from `culprit` on, or as `override` says per step."""

    world: World
    history: History
    culprit: str
    override: Callable[[dict[str, Any]], str | None] = lambda payload: None
    answered: set[str] = field(default_factory=set)

    def conclusion(self, payload: dict[str, Any]) -> str:
        chosen = self.override(payload)
        if chosen is not None:
            return chosen
        sha = payload["payload"]["after"]
        order = self.history.commits
        return "failure" if order.index(sha) >= order.index(self.culprit) else "success"

    async def answer(self) -> int:
        """Report every unanswered bisect dispatch; how many were answered."""
        fresh = [
            p
            for p in bisect_dispatches(self.world, BROKEN)
            if p["delivery_id"] not in self.answered
        ]
        for payload in fresh:
            delivery = payload["delivery_id"]
            self.answered.add(delivery)
            run_id = 7000 + len(self.answered)
            for status, concluded in (
                ("in_progress", None),
                ("completed", self.conclusion(payload)),
            ):
                answer = await self.world.report(BROKEN, delivery, status, concluded, run_id=run_id)
                assert answer.status_code == 200, answer.text
        return len(fresh)


async def bisect_to_the_end(finder: CulpritFinder, ci: BackendCI, *, passes: int = 30) -> None:
    """Leader passes and CI answers in turn until every bisection has its verdict."""
    for _ in range(passes):
        moved = await finder.run_pass()
        if moved and not any(b.running for b in moved) and await ci.answer() == 0:
            return
        await ci.answer()
    raise AssertionError("the bisection did not end")


def the_finder(world: World) -> CulpritFinder:
    assert world.runtime.culprits is not None
    return world.runtime.culprits

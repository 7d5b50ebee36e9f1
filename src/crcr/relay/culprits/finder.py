"""The leader's culprit finder (SPEC §14): start a bisection where a backend broke, drive it.

Each pass (a sweeper leader step, under a short lock of its own) starts a bisection for
every backend that turned `failing` with a known last good push, then moves each
running one on: it reads its dispatches' results from the HUD, asks the pure `search`
for the next move, records the move (compare-and-set on the record's version), and only
then sends the dispatches it chose. So a leader killed at any point leaves a record its
successor continues from: finished steps are never sent again, and a step recorded but
never sent (its dispatch record missing) is sent by the next pass.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from crcr.github.client import GitHubClient
from crcr.github.errors import GitHubNotFound, GitHubUnprocessable
from crcr.hud.reads.culprits import JobResult
from crcr.relay.culprits.announce import Announcer
from crcr.relay.culprits.commits import RangeUnknown, commit_range
from crcr.relay.culprits.dispatches import push_payload, send_commit
from crcr.relay.culprits.record import BISECT_EVENT, Bisection, Step, Verdict, bisection_key
from crcr.relay.culprits.search import plan
from crcr.relay.culprits.verdicts import broken_range, push_verdicts, verdict_of
from crcr.relay.webhook.fanout import FanOut
from crcr.stores.roles import Bisections, Dispatches, LeaderLock

log = logging.getLogger(__name__)

FINDER_LOCK = "culprits"
LOCK_SECONDS = 120.0
PUSH_WINDOW = 200
"""Push job rows read to find where a backend broke (several jobs per push)."""
DELIVERY_PREFIX = "crcr-bisect-"
ANNOUNCED = "announced"


class FinderStore(Bisections, Dispatches, LeaderLock, Protocol):
    """The state store's roles the finder uses."""


class Results(Protocol):
    """The HUD's rows the finder reads (`hud/reads/culprits.py`)."""

    async def push_results(self, repo: str, limit: int) -> list[JobResult]:
        """The backend's newest completed push jobs, newest first."""

    async def dispatch_jobs(self, repo: str, delivery_ids: Sequence[str]) -> list[JobResult]:
        """The backend's job rows of these dispatches, at their latest attempts."""


class BisectRefused(Exception):
    """A bisection cannot start; the message says why, for the operator."""


@dataclass
class CulpritFinder:
    """Start and drive bisections; announce each verdict once."""

    store: FinderStore
    results: Results
    fanout: FanOut
    github: GitHubClient
    announcer: Announcer
    failing: Callable[[], Awaitable[list[str]]]
    upstream_repo: str
    parallel: int
    instance: str
    clock: Callable[[], float] = time.time
    step_timeout: float = 21600.0
    """Seconds a step may wait for its result (`CRCR_ZOMBIE_TIMEOUT`): a backend whose
    workflow does not take `crcr_bisect` never answers, and the search must not wait
    for ever."""
    _repository_cache: dict[str, Any] | None = field(default=None, init=False, repr=False)

    async def __call__(self) -> None:
        """The sweeper's leader step: `run_pass`."""
        await self.run_pass()

    async def run_pass(self) -> list[Bisection]:
        """Start what broke, move every bisection on; the bisections as they now stand."""
        if not await self.store.acquire_lock(FINDER_LOCK, self.instance, LOCK_SECONDS):
            return []
        try:
            known = await self.load()
            await self._start_where_broken(known)
            moved = []
            for bisection in await self.load():
                moved.append(await self.advance(bisection))
            return moved
        finally:
            await self.store.release_lock(FINDER_LOCK, self.instance)

    async def load(self) -> list[Bisection]:
        """Every bisection the store holds, oldest first (an unreadable one is skipped)."""
        found = []
        for key, raw in (await self.store.bisections()).items():
            try:
                found.append(Bisection.from_store(raw))
            except (KeyError, TypeError, ValueError):
                log.warning("bisection %s cannot be read by this release: left alone", key)
        return sorted(found, key=lambda b: b.started_at)

    async def _start_where_broken(self, known: list[Bisection]) -> None:
        keys = {b.key for b in known}
        busy = {b.repo.lower() for b in known if b.running}
        for repo in await self.failing():
            if repo.lower() in busy:
                continue
            broken = broken_range(await self.results.push_results(repo, PUSH_WINDOW))
            if broken is None or bisection_key(repo, broken.good, broken.bad) in keys:
                continue
            try:
                await self.start(repo, broken.good, broken.bad, origin="failing")
            except (RangeUnknown, GitHubNotFound, GitHubUnprocessable) as exc:
                await self._unbisectable(repo, broken.good, broken.bad, str(exc))
            except Exception as exc:  # GitHub or the store down: the next pass retries
                log.warning("cannot bisect %s yet: %s", repo, exc, extra={"repo": repo})

    async def _unbisectable(self, repo: str, good: str, bad: str, why: str) -> None:
        """Record a range GitHub cannot list as `inconclusive`, once: no retry every pass."""
        bisection = Bisection(
            repo=repo, good=good, bad=bad, commits=(), started_at=self.clock(), origin="failing"
        ).ended(Verdict.INCONCLUSIVE, self.clock(), reason=f"the range is unknown: {why}")
        if await self.store.create_bisection(bisection.key, bisection.to_store()):
            log.warning("cannot bisect %s: %s", repo, why, extra={"repo": repo})
            await self._announce_once(bisection)

    async def start(self, repo: str, good: str, bad: str, *, origin: str) -> Bisection:
        """Create the bisection of `good...bad` for `repo` (once) and make its first move.

        One bisection per backend at a time: `CRCR_BISECT_PARALLEL` bounds what one backend
        is sent, so a second range waits until the first has its verdict.
        """
        running = [b for b in await self.load() if b.running and b.repo.lower() == repo.lower()]
        if running:
            now = running[0]
            raise BisectRefused(f"{repo} is already bisecting {now.good}...{now.bad}")
        commits = await commit_range(self.github, self.upstream_repo, good, bad)
        bisection = Bisection(
            repo=repo,
            good=good.lower(),
            bad=bad.lower(),
            commits=tuple(commits),
            started_at=self.clock(),
            origin=origin,
        )
        if not await self.store.create_bisection(bisection.key, bisection.to_store()):
            raise BisectRefused(f"{repo} is already bisecting {good}...{bad}")
        log.info(
            "bisecting %s over %d commits (%s...%s)",
            repo,
            len(commits),
            good,
            bad,
            extra={"repo": repo},
        )
        return await self.advance(bisection)

    async def advance(self, bisection: Bisection) -> Bisection:
        """Record the results that came, decide, record the move, then send it."""
        if not bisection.running:
            return await self._announce_once(bisection)
        now = self.clock()
        await self._send_unsent(bisection)
        current = await self._with_results(bisection)
        if await self._main_recovered(current):
            moved = current.ended(Verdict.RESOLVED, now, reason="a new good result on main")
            return await self._save_and_announce(bisection, moved, [])
        late = [s for s in current.waiting if now - s.sent_at > self.step_timeout]
        if late:
            why = (
                f"step {late[0].number} had no result within {self.step_timeout:g} s "
                f"(does {current.repo}'s workflow take crcr_bisect dispatches?)"
            )
            moved = current.ended(Verdict.INCONCLUSIVE, now, reason=why)
            return await self._save_and_announce(bisection, moved, [])
        move = plan(len(current.commits), current.steps, self.parallel)
        sent = [
            Step(
                number=len(current.steps) + n + 1,
                index=index,
                sha=current.commits[index].sha,
                delivery_id=f"{DELIVERY_PREFIX}{uuid.uuid4()}",
                purpose=move.purpose,
                sent_at=now,
            )
            for n, index in enumerate(move.dispatch)
        ]
        changes: dict[str, Any] = {"steps": current.steps + tuple(sent)}
        if move.culprit_index is not None:
            changes["culprit"] = current.commits[move.culprit_index].sha
        moved = replace(current, **changes)
        if move.verdict is not Verdict.RUNNING:
            confirmed = move.verdict is Verdict.CONFIRMED
            moved = moved.ended(move.verdict, now, confirmed=confirmed, reason=move.reason)
        return await self._save_and_announce(bisection, moved, sent)

    async def _save_and_announce(
        self, before: Bisection, after: Bisection, sent: list[Step]
    ) -> Bisection:
        if after == before:
            return before
        saved = replace(after, version=before.version + 1)
        if not await self.store.replace_bisection(
            saved.key, saved.to_store(), version=before.version
        ):
            log.info("bisection %s moved on elsewhere; this pass leaves it", before.key)
            return before
        for step in sent:
            await self._send(saved, step)
        return await self._announce_once(saved)

    async def _announce_once(self, bisection: Bisection) -> Bisection:
        if bisection.running or bisection.extra.get(ANNOUNCED):
            return bisection
        await self.announcer.announce(bisection)
        done = replace(
            bisection, extra={**bisection.extra, ANNOUNCED: True}, version=bisection.version + 1
        )
        if await self.store.replace_bisection(done.key, done.to_store(), version=bisection.version):
            return done
        return bisection

    async def _with_results(self, bisection: Bisection) -> Bisection:
        waiting = bisection.waiting
        if not waiting:
            return bisection
        rows = await self.results.dispatch_jobs(bisection.repo, [s.delivery_id for s in waiting])
        by_delivery: dict[str, list[JobResult]] = {}
        for row in rows:
            by_delivery.setdefault(row.delivery_id, []).append(row)
        steps = tuple(
            step
            if step.conclusion is not None
            else replace(step, conclusion=verdict_of(by_delivery.get(step.delivery_id, [])))
            for step in bisection.steps
        )
        return bisection.with_steps(steps)

    async def _main_recovered(self, bisection: Bisection) -> bool:
        """A push newer than the bisection passed: main is green again (`resolved`)."""
        results = await self.results.push_results(bisection.repo, PUSH_WINDOW)
        verdicts = push_verdicts(results)
        if not verdicts or verdicts[0][1] != "success":
            return False
        newest = verdicts[0][0]
        finished = max(r.finished.timestamp() for r in results if r.head_sha.lower() == newest)
        return finished > bisection.started_at and newest != bisection.good

    async def _send_unsent(self, bisection: Bisection) -> None:
        """Send the steps a leader recorded but died before sending."""
        for step in bisection.waiting:
            if await self.store.get_dispatch(step.delivery_id, bisection.repo) is None:
                await self._send(bisection, step)

    async def _send(self, bisection: Bisection, step: Step) -> None:
        repository = await self._repository()
        parent = bisection.commits[step.index - 1].sha if step.index > 0 else bisection.good
        payload = push_payload(
            repository, step.sha, parent=parent, title=bisection.commits[step.index].title
        )
        outcome = await send_commit(
            self.fanout,
            event_type=BISECT_EVENT,
            delivery_id=step.delivery_id,
            upstream_repo=self.upstream_repo,
            repo=bisection.repo,
            payload=payload,
            extra={"bisect": {"good": bisection.good, "bad": bisection.bad, "step": step.number}},
        )
        log.info(
            "bisect step %d of %s: %s at %s",
            step.number,
            bisection.repo,
            outcome.result,
            step.sha,
            extra={"delivery_id": step.delivery_id, "repo": bisection.repo},
        )

    async def _repository(self) -> dict[str, Any]:
        """The upstream's repository object, asked of GitHub once per finder."""
        if self._repository_cache is None:
            self._repository_cache = await self.github.get_repo(self.upstream_repo)
        return self._repository_cache

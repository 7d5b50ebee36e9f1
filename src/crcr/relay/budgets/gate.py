"""The one hook the webhook's fan-out calls (SPEC §15): which targets go now, which wait
in a capped backend's line, and which a PR's changed files skip.

An allowlist without any budget answers at once, with no store or GitHub call: the
common case costs the fan-out one dictionary lookup.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from crcr.github.client import GitHubClient
from crcr.hud.write.path_skips import PathSkips
from crcr.relay.allowlist.model import Allowlist
from crcr.relay.budgets.cap import DispatchCap, Waiting
from crcr.relay.budgets.entries import budgeted_entries
from crcr.relay.budgets.merge_queue import EVENT as MERGE_GROUP
from crcr.relay.budgets.merge_queue import MergeQueue, l4_only
from crcr.relay.budgets.paths import changed_files, wants_files
from crcr.relay.budgets.skip_notice import SkipNotice
from crcr.relay.jobs.dispatch import UpstreamContext
from crcr.relay.webhook.fanout import DispatchOutcome, Result

PATH_JUDGED_ACTIONS = frozenset({"opened", "synchronize", "reopened"})
"""Pull request actions whose head's files decide whether a path-filtered backend runs."""

ChangedFiles = Callable[[str, int], Awaitable[list[str] | None]]
"""(upstream repo, PR number) → the PR's changed files, or None when not known in full."""


@dataclass(frozen=True)
class Rationed:
    """One event's targets, split: sent now, waiting for a slot, skipped by paths."""

    send_now: list[str]
    waiting: list[str]
    skipped: list[str]


class BudgetGate:
    """Paths first (a skipped backend takes no slot), then each capped backend's pool."""

    def __init__(
        self,
        cap: DispatchCap,
        allowlist: Callable[[], Awaitable[Allowlist]],
        files: ChangedFiles,
    ) -> None:
        self.cap = cap
        self.merge_queue: MergeQueue | None = None
        """SPEC §15's merge queue (check runs and deadlines), once wired."""
        self.skips_seen: SkipNotice | None = None
        """Tells the HUD a head's path-skipped backends (its PR view shows them)."""
        self._allowlist = allowlist
        self._files = files

    @classmethod
    def on_github(
        cls, cap: DispatchCap, allowlist: Callable[[], Awaitable[Allowlist]], github: GitHubClient
    ) -> BudgetGate:
        """The gate that lists a PR's files through GitHub's pulls files API."""

        async def files(upstream: str, number: int) -> list[str] | None:
            return await changed_files(github, upstream, number)

        return cls(cap, allowlist, files)

    async def ration(
        self,
        *,
        delivery_id: str,
        context: UpstreamContext,
        client_payload: Mapping[str, Any],
        trimmed: bool,
        repos: Sequence[str],
    ) -> Rationed:
        """Split this event's targets (`repos`, in fan-out order)."""
        allowlist = await self._allowlist()
        if context.event_type == MERGE_GROUP:
            # L4 alone, and never behind a cap: the merge queue waits on its check run.
            return Rationed(l4_only(allowlist, repos), [], [])
        budgeted = budgeted_entries(allowlist)
        if not budgeted or not any(repo.lower() in budgeted for repo in repos):
            return Rationed(list(repos), [], [])
        targets, skipped = await self._judge_paths(allowlist, context, repos)
        if skipped and context.pr_number and self.skips_seen is not None:
            notice = PathSkips(
                context.upstream_repo,
                context.pr_number,
                context.head_sha,
                delivery_id,
                tuple(skipped),
            )
            await self.skips_seen(notice)
        waiting = Waiting(delivery_id, "", context, client_payload, trimmed)
        send_now, held_back = await self.cap.ration(allowlist, waiting, targets)
        return Rationed(send_now, held_back, skipped)

    async def settle(
        self, delivery_id: str, context: UpstreamContext, outcomes: Sequence[DispatchOutcome]
    ) -> None:
        """After the fan-out: refused dispatches give their slots back; a merge group's
        backends get their check runs and deadlines."""
        if any(o.result is Result.FAILED for o in outcomes):
            await self.cap.settle(delivery_id, outcomes)
        if context.event_type == MERGE_GROUP and self.merge_queue is not None:
            await self.merge_queue.dispatched(delivery_id, context, outcomes)

    async def _judge_paths(
        self, allowlist: Allowlist, context: UpstreamContext, repos: Sequence[str]
    ) -> tuple[list[str], list[str]]:
        filtered = [
            repo
            for repo in repos
            if (entry := allowlist.entry(repo)) is not None and entry.budget.filters_paths
        ]
        judged = context.event_type == "pull_request" and context.action in PATH_JUDGED_ACTIONS
        if not filtered or not judged or not context.pr_number:
            return list(repos), []
        files = await self._files(context.upstream_repo, context.pr_number)
        if files is None:
            return list(repos), []
        skipped = []
        for repo in filtered:
            entry = allowlist.entry(repo)
            if entry is not None and not wants_files(entry.budget, files):
                skipped.append(repo)
        return [repo for repo in repos if repo not in skipped], skipped

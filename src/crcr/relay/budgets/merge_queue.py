"""The merge queue (SPEC §15): a merge group is checked by the L4 backends, and a silent
one never stalls the queue.

`merge_group` `checks_requested` is dispatched to L4 backends only. Each gets an
in-progress check run `crcr/<repo>/merge_group` on the group's head SHA at dispatch (the
name an upstream makes required), and a deadline on the sweeper's list. Once every job
that reported on the dispatch has ended, the check run concludes with their combined
result (the worst of their conclusions: one failed shard fails the group); a job that
starts after that and changes the combined result concludes it again (once per
result). If nothing has concluded by `CRCR_MERGE_QUEUE_DEADLINE`, the sweeper concludes
it `neutral` ("no result in time"). A `destroyed` group closes its dispatch records
(late callbacks are refused), concludes what is still open `neutral` and leaves the
deadline list.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

from crcr.github.client import GitHubClient
from crcr.github.errors import GitHubError
from crcr.relay.allowlist.model import Allowlist, Level
from crcr.relay.jobs.dispatch import MERGE_GROUP_EVENT, DispatchStatus, UpstreamContext
from crcr.relay.jobs.events import JobTransitioned
from crcr.relay.jobs.lifecycle import JobState
from crcr.relay.webhook.fanout import DispatchOutcome, Result
from crcr.stores.roles import Caches, Deadlines, Dispatches, Idempotency, JobSummaries

log = logging.getLogger(__name__)

EVENT = MERGE_GROUP_EVENT
DEADLINE_PREFIX = "merge-queue:"
"""Keys of the sweeper's deadline list this module handles: `merge-queue:<delivery>:<repo>`."""
GROUPS = "merge-group"
"""Cache namespace: a group's head SHA → its dispatch (`delivery_id`, `repos`)."""
CONCLUDED = "merge-group-concluded"
"""Cache namespace: `<delivery>:<repo>` → the conclusion its check run was given."""


WORST_FIRST = (
    "failure",
    "timed_out",
    "cancelled",
    "action_required",
    "startup_failure",
    "stale",
    "neutral",
    "skipped",
    "success",
)
"""Conclusions from the one that most holds a merge group back to the one that least."""


def combined(conclusions: Sequence[str]) -> str:
    """A group's conclusion from its jobs': the worst (an unknown one counts as failure)."""
    return min(
        conclusions,
        key=lambda c: WORST_FIRST.index(c) if c in WORST_FIRST else -1,
        default="neutral",
    )


class MergeQueueStore(Caches, Deadlines, Dispatches, Idempotency, JobSummaries, Protocol):
    """The state store's roles this module uses."""


def check_name(repo: str) -> str:
    """The check run a backend gets on every merge group."""
    return f"crcr/{repo}/{EVENT}"


def l4_only(allowlist: Allowlist, repos: Sequence[str]) -> list[str]:
    """A merge group is checked by L4 backends alone."""
    return [repo for repo in repos if allowlist.level_of(repo) == Level.L4]


class MergeQueue:
    """Check runs on merge groups, their deadline, and destroyed groups."""

    def __init__(
        self,
        store: MergeQueueStore,
        github: GitHubClient,
        upstream_repo: str,
        *,
        deadline: float,
        ttl: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._github = github
        self._upstream = upstream_repo
        self._deadline = deadline
        self._ttl = ttl
        self._clock = clock

    @property
    def deadline_handlers(self) -> dict[str, Callable[[str, float], Awaitable[bool]]]:
        """What the sweeper hands due deadline-list keys to."""
        return {DEADLINE_PREFIX: self.handle_deadline}

    async def dispatched(
        self, delivery_id: str, context: UpstreamContext, outcomes: Sequence[DispatchOutcome]
    ) -> None:
        """After a merge group's fan-out: an in-progress check run and a deadline each."""
        sent = [o.repo for o in outcomes if o.result in (Result.DISPATCHED, Result.QUEUED)]
        group = {"delivery_id": delivery_id, "repos": sent}
        await self._store.cache_set(GROUPS, context.head_sha.lower(), json.dumps(group), self._ttl)
        for repo in sent:
            await self._store.track_deadline(
                f"{DEADLINE_PREFIX}{delivery_id}:{repo}", self._clock() + self._deadline
            )
            try:
                await self._check_run(
                    repo,
                    context.head_sha,
                    "in_progress",
                    None,
                    "In progress",
                    f"{repo} is checking this merge group.",
                )
            except GitHubError as exc:
                # The deadline still concludes it; GitHub's fault, not the dispatch's.
                log.warning(
                    "merge group check run for %s not created: %s",
                    repo,
                    exc,
                    extra={"delivery_id": delivery_id, "repo": repo},
                )

    async def on_job(self, event: JobTransitioned) -> None:
        """A hook on job transitions: a group concludes once all its reported jobs ended.

        Jobs that started and jobs that ended are kept apart, each job a field written
        on its own, so that transitions handled on different instances in any order
        agree: the last job to end sees every other job's end (it wrote its own first).
        """
        job = event.job
        context, dispatch = job.dispatch.context, job.dispatch
        if context.event_type != EVENT:
            return
        key = f"{dispatch.delivery_id}:{dispatch.repo}"
        head_sha = context.head_sha
        if job.state == JobState.IN_PROGRESS:
            await self._store.put_job_summary(head_sha, f"{key}:started", job.key, {}, self._ttl)
            return
        conclusion = job.conclusion or (
            "timed_out" if job.state == JobState.TIMED_OUT else "neutral"
        )
        ended = {"conclusion": conclusion}
        await self._store.put_job_summary(head_sha, f"{key}:ended", job.key, ended, self._ttl)
        started = await self._store.job_summaries(head_sha, f"{key}:started")
        endings = await self._store.job_summaries(head_sha, f"{key}:ended")
        if not started.keys() <= endings.keys():
            return
        result = combined([str(summary["conclusion"]) for summary in endings.values()])
        if await self._store.claim_once(f"{CONCLUDED}:{key}:{result}", self._ttl):
            await self._conclude(dispatch.repo, head_sha, key, result)
            await self._store.untrack_deadline(DEADLINE_PREFIX + key)

    async def handle_deadline(self, key: str, now: float) -> bool:
        """A merge group's backend reached its deadline: `neutral` unless it concluded."""
        delivery_id, _, repo = key.removeprefix(DEADLINE_PREFIX).partition(":")
        concluded = f"{delivery_id}:{repo}"
        if await self._store.cache_get(CONCLUDED, concluded) is not None:
            return True
        record = await self._store.get_dispatch(delivery_id, repo)
        if record is None:
            return True
        head_sha = str(record["context"]["head_sha"])
        await self._conclude(repo, head_sha, concluded, "neutral")
        log.info(
            "merge group check concluded neutral: no result in time",
            extra={"delivery_id": delivery_id, "repo": repo},
        )
        return True

    async def destroyed(self, payload: Mapping[str, Any]) -> None:
        """A webhook hook: a destroyed merge group closes its records and open checks."""
        if payload.get("action") != "destroyed":
            return
        head_sha = str((payload.get("merge_group") or {}).get("head_sha") or "").lower()
        raw = await self._store.cache_get(GROUPS, head_sha) if head_sha else None
        if raw is None:
            return
        group = json.loads(raw)
        delivery_id = str(group["delivery_id"])
        reason = f"merge group destroyed ({payload.get('reason') or 'unknown reason'})"
        for repo in group["repos"]:
            closed = {"status": str(DispatchStatus.FAILED), "error": reason}
            await self._store.update_dispatch(delivery_id, repo, closed, self._ttl)
            key = f"{delivery_id}:{repo}"
            if await self._store.cache_get(CONCLUDED, key) is None:
                await self._conclude(repo, head_sha, key, "neutral", title="Merge group destroyed")
            await self._store.untrack_deadline(DEADLINE_PREFIX + key)

    async def _conclude(
        self, repo: str, head_sha: str, key: str, conclusion: str, title: str | None = None
    ) -> None:
        if title is None:
            title = "No result in time" if conclusion == "neutral" else conclusion.capitalize()
        summary = (
            f"{repo} did not report a result within {self._deadline:g} s; neutral, so"
            " the merge queue is not held up."
            if title == "No result in time"
            else f"{repo}: {title.lower()}."
        )
        await self._check_run(repo, head_sha, "completed", conclusion, title, summary)
        await self._store.cache_set(CONCLUDED, key, conclusion, self._ttl)

    async def _check_run(
        self,
        repo: str,
        head_sha: str,
        status: str,
        conclusion: str | None,
        title: str,
        summary: str,
    ) -> None:
        fields: dict[str, Any] = {
            "name": check_name(repo),
            "head_sha": head_sha,
            "status": status,
            "output": {"title": title, "summary": summary},
        }
        if conclusion is not None:
            fields["conclusion"] = conclusion
        await self._github.create_check_run(self._upstream, **fields)

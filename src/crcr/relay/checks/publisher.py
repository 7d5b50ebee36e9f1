"""Create L3/L4 upstream check runs once per job transition, through a durable queue (SPEC §7).

For every accepted callback of an L3/L4 job, and every zombie the sweeper times out:

1. the job's summary is recorded per (head_sha, repo), so that a label added later can
   backfill check runs and an oncall comment can list every failing job;
2. if the job wants a check run, an item `<job key>:<state>` goes into the "checks"
   queue (the deterministic id makes it once per transition), ready after a grace delay;
3. one inline attempt follows (no retries, about a second), and a mark in the store
   tells the queued item that nothing is left to do.

Inline, the check run shows on the PR as soon as the job reports instead of at the next
sweep (every 15 s); queued first, a crash or a GitHub 5xx during the attempt loses
nothing; the grace delay keeps the sweeper off the item while the attempt runs, so it is
not created twice. (A request that times out after GitHub created the run can still
yield an identical second one; GitHub takes no idempotency key.)

Order: the inline attempt builds the check run from the job its transition left; a
queued item rebuilds it from the job record when it is handled and is skipped if the
job has moved on since. An in_progress check run that lands after the job finished
queues the finished one again, so the newest run of a name is always the job's latest.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Protocol

from prometheus_client import Counter

from crcr.config.settings import Settings
from crcr.github.client import GitHubClient
from crcr.github.errors import GitHubError, GitHubNotFound, GitHubUnprocessable
from crcr.relay.allowlist.model import Allowlist, Level
from crcr.relay.audit.entries import check_run_entry
from crcr.relay.audit.trail import AuditTrail
from crcr.relay.checks.check_runs import (
    CHECKS_WANTED_FLAG,
    FAILING_CONCLUSIONS,
    TERMINAL_STATES,
    CheckReport,
    check_run_fields,
    latest_per_check,
    report_from_job,
    shows_nothing_upstream,
)
from crcr.relay.checks.check_runs import wants_check_run as wanted_by_rule
from crcr.relay.checks.check_watch import CheckWatch
from crcr.relay.checks.flake_rerun import RERUN_QUEUE, FlakeRerun
from crcr.relay.checks.notes import noted_conclusion
from crcr.relay.checks.notes_source import BaselineVerdicts, NotesSource
from crcr.relay.checks.oncall_comments import ONCALL_QUEUE, OncallNotifier, OncallStore
from crcr.relay.checks.open_checks import WATCH_PREFIX, OpenChecks
from crcr.relay.jobs.events import JobTransitioned
from crcr.relay.jobs.job import Job, JobRecordUnreadable
from crcr.relay.jobs.lifecycle import JobState
from crcr.relay.jobs.queue_handler import HandlerResult, QueueHandler
from crcr.stores.roles import Caches, Deadlines, Flags, JobStates
from crcr.stores.state import LeasedItem


class PublisherStore(OncallStore, JobStates, Flags, Caches, Deadlines, Protocol):
    """The state store's roles this module and its oncall notifier use."""


log = logging.getLogger(__name__)

CHECKS_QUEUE = "checks"
CREATED_MARKS = "check-run-created"
"""Cache namespace: item id → check-run id (or "dropped") once an item is settled."""

CHECK_RUNS = Counter(
    "crcr_check_runs_total",
    "Upstream check-run items by result (created, stale, unwanted, dropped, deferred).",
    ["result"],
)


class JobLevels(Protocol):
    """The level a job is treated at, which a temporary demotion lowers (SPEC §10.1)."""

    async def level_for_job(self, repo: str, level: Level, started_at: float | None) -> Level:
        """`level` as recorded when the job started, or lower while its backend is demoted."""


class RecordedLevels:
    """No demotions: every job keeps the level recorded when it started."""

    async def level_for_job(self, repo: str, level: Level, started_at: float | None) -> Level:
        return level


def check_item_id(job_key: str, state: JobState) -> str:
    """The queue item (and mark) of one job transition."""
    return f"{job_key}:{state}"


class CheckPublisher:
    """The callback hook, the label backfill and the queue handlers for check runs."""

    def __init__(
        self,
        *,
        store: PublisherStore,
        github: GitHubClient,
        allowlist: Callable[[], Awaitable[Allowlist]],
        settings: Settings,
        levels: JobLevels | None = None,
        inline_budget: float = 1.0,
        inline_grace: float = 10.0,
        backfill_budget: float = 3.0,
        queue_retries: int = 1,
        baseline: BaselineVerdicts | None = None,
        audit: AuditTrail | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._audit = audit
        self._github = github
        self._allowlist = allowlist
        self._levels = levels or RecordedLevels()
        self._upstream = settings.upstream_repo
        self._clock = clock
        self._ttl = settings.status_ttl
        self.inline_budget = inline_budget
        self.inline_grace = inline_grace
        self.backfill_budget = backfill_budget
        self._queue_retries = queue_retries
        self.notes = NotesSource(
            store,
            FlakeRerun(
                store, github, enabled=settings.l4_confirm_rerun > 0, ttl=settings.status_ttl
            ),
            hud_public_url=settings.hud_public_url,
            baseline=baseline,
        )
        self.notes.flake.republish = self.republish
        self.open_checks = OpenChecks(
            store, ttl=settings.status_ttl, zombie_timeout=settings.zombie_timeout
        )
        self.watch = CheckWatch(
            store, self.open_checks, self.notes.flake, github, self._upstream, self.republish
        )
        self.oncall = OncallNotifier(
            store,
            github,
            allowlist,
            settings.upstream_repo,
            max_retries=queue_retries,
            ttl=settings.status_ttl,
        )

    @property
    def queue_handlers(self) -> dict[str, QueueHandler]:
        """What the sweeper drains for this component, check runs before comments."""
        return {
            CHECKS_QUEUE: self.handle_item,
            RERUN_QUEUE: self.notes.flake.handle_item,
            ONCALL_QUEUE: self.oncall.handle_item,
        }

    @property
    def deadline_handlers(self) -> dict[str, Callable[[str, float], Awaitable[bool]]]:
        """What the sweeper's leader hands due deadline-list keys to, by key prefix."""
        return {WATCH_PREFIX: self.watch.handle_deadline}

    # --- entry points ------------------------------------------------------------------
    async def on_accepted(self, event: JobTransitioned) -> None:
        """Hook for accepted callbacks and timed-out zombies (`JobHook`): the event's job
        is the job as it now stands, so its check run is built without a store read."""
        job, ends_open = event.job, self.open_checks.ends_one_left_open
        if shows_nothing_upstream(job) and not await ends_open(report_from_job(job)):
            return
        if job.level < Level.L3 and not await self._replaces_a_shown_check(job):
            if job.state in TERMINAL_STATES and job.dispatch.context.pr_number:
                await self.oncall.follow_below_l3(job, event.oncall_comment)
            return
        report = report_from_job(job)
        allowlist = await self._allowlist()
        repo = _spelling(allowlist, report.repo)
        # Summary first, flag read after; the label webhook does the reverse, so one
        # side always sees the other and no job is missed (SPEC §7, label while running).
        await self._store.put_job_summary(
            report.head_sha, repo, job.key, report.to_summary(), self._ttl
        )
        if await self._treated_level(report, allowlist) is None:
            # No check run (demoted, say), yet the oncall comment shows this job's latest
            # state whatever the level is by now (SPEC §10.2, invariant 2).
            cause = check_item_id(job.key, job.state) + ":no-check-run"
            await self.oncall.update(report, repo, cause=cause, seen=event.oncall_comment)
            return
        item_id = await self._queue(job.key, job.state)
        if item_id is not None:
            await self._try_inline(item_id, job.key, job.state, budget=self.inline_budget, job=job)

    async def _replaces_a_shown_check(self, job: Job) -> bool:
        """Whether a re-run recorded below L3 (its backend moved down by a merged level
        pull request) follows an attempt whose check run the commit shows: its check run
        must replace that one, or the check says what an older attempt did. First
        attempts cost no store read."""
        if job.run.run_attempt in ("", "1"):
            return False
        return await self.open_checks.shown_level(report_from_job(job)) is not None

    async def backfill(self, head_sha: str, repos: Sequence[str]) -> int:
        """Create check runs for jobs of `repos` that reported before a label opted them in:
        each job's latest run alone, as one made for an older run after it would stand.

        Called by the webhook after it raised the `checks-wanted` flags. Every job is
        queued before any GitHub call, so running out of time loses nothing.
        Returns how many check runs were queued.
        """
        queued: list[tuple[str, str, JobState]] = []
        for repo in repos:
            for key in latest_per_check(await self._store.job_summaries(head_sha, repo)).values():
                if (job := await self._store.get_job(key)) is None:
                    continue
                state = JobState(job.state)
                if (item_id := await self._queue(key, state)) is not None:
                    queued.append((item_id, key, state))
        try:
            async with asyncio.timeout(self.backfill_budget):
                for item_id, key, state in queued:
                    await self._try_inline(item_id, key, state, budget=None)
        except TimeoutError:
            log.warning("label backfill on %s left check runs to the queue", head_sha)
        return len(queued)

    async def handle_item(self, item: LeasedItem) -> HandlerResult:
        """Queue handler of "checks"; a GitHub outage raises, and the sweeper retries."""
        key, state = str(item.payload["job_key"]), JobState(item.payload["state"])
        return await self.publish(item.item_id, key, state, max_retries=self._queue_retries)

    # --- the work ----------------------------------------------------------------------
    async def publish(
        self,
        item_id: str,
        job_key: str,
        state: JobState,
        *,
        max_retries: int,
        job: Job | None = None,
    ) -> HandlerResult:
        """Create the check run of one job transition unless it is settled or stale.

        `job`: as its transition left it, when the caller holds it (the hook's inline
        attempt); a queued item reads it, as the job may have moved on since."""
        if await self._store.cache_get(CREATED_MARKS, item_id) is not None:
            return HandlerResult.DONE
        if job is None:
            record = await self._store.get_job(job_key)
            if record is None or record.state != state:
                CHECK_RUNS.labels(result="stale").inc()
                return HandlerResult.DONE
            try:
                job = Job.from_store(job_key, record)
            except JobRecordUnreadable:
                return HandlerResult.DROP
        report = report_from_job(job)
        allowlist = await self._allowlist()
        level = await self._treated_level(report, allowlist)
        if level is None:
            CHECK_RUNS.labels(result="unwanted").inc()
            return HandlerResult.DONE
        # A demoted L4 backend's new job is treated as L3's: no automatic re-run either.
        notes = await self.notes.notes_for(replace(report, level=level), max_retries=max_retries)
        fields = check_run_fields(report, notes)
        if fields["status"] == "in_progress":
            await self.open_checks.opening(report, level, fields, now=self._clock())
        try:
            created = await self._github.create_check_run(
                self._upstream, max_retries=max_retries, **fields
            )
        except (GitHubNotFound, GitHubUnprocessable) as exc:
            log.error("check run %s refused for good: %s", report.check_name, exc)
            await self._store.cache_set(CREATED_MARKS, item_id, "dropped", self._ttl)
            CHECK_RUNS.labels(result="dropped").inc()
            return HandlerResult.DROP
        await self._store.cache_set(CREATED_MARKS, item_id, str(created.get("id")), self._ttl)
        await self.open_checks.shown(report, level)
        CHECK_RUNS.labels(result="created").inc()
        if fields["status"] == "completed":
            await self.open_checks.concluded(report)
        if self._audit is not None:  # "check runs seen" of `crcr doctor` (SPEC §12)
            entry = check_run_entry(report.repo, job_key, report.check_name, created.get("id"))
            self._audit.record(entry)
        repo = _spelling(allowlist, report.repo)
        # A superseded commit tells no oncall (§15); its runs' cancelling edits a comment.
        late = job.dispatch.superseded_by is not None and state is not JobState.SUPERSEDED
        conclusion = None if late else noted_conclusion(report.check_conclusion, notes)
        if conclusion in FAILING_CONCLUSIONS:
            await self.oncall.notify(report, repo, cause=item_id)
        elif conclusion is not None:
            await self.oncall.update(report, repo, cause=item_id)
        if state is JobState.IN_PROGRESS:
            await self._requeue_if_finished(job_key)
        return HandlerResult.DONE

    async def republish(self, job_key: str, reason: str) -> None:
        """Queue a finished job's check run again, its notes having changed (`reason`)."""
        job = await self._store.get_job(job_key)
        if job is None or JobState(job.state) not in TERMINAL_STATES:
            return
        state = JobState(job.state)
        item_id = f"{check_item_id(job_key, state)}:{reason}"
        if await self._queue(job_key, state, item_id=item_id) is not None:
            await self._try_inline(item_id, job_key, state, budget=self.inline_budget)

    async def _treated_level(self, report: CheckReport, allowlist: Allowlist) -> Level | None:
        """The level the job's check run is published at; None: the job gets none.

        A job whose check run is open (it, or the attempt it confirms) keeps the level
        it was created at: a check run once shown is always concluded, whatever level
        changes meanwhile (SPEC §10.2, invariant 1); a backend removed from the
        allowlist gets only that conclusion (its timeout), no new check run in progress.
        Otherwise the level the job is treated at (demotions) and, for L3, its labels
        decide; and where they give none, a re-run of a run whose check run the commit
        shows is published at that level, so the newest check run is the newest attempt's.
        """
        listed = allowlist.entry(report.repo) is not None
        opened_at = await self.open_checks.level_for(report)
        if opened_at is not None and (listed or report.state in TERMINAL_STATES):
            return opened_at
        if not listed:
            return None  # removed from the allowlist: none but the open ones' ends (SPEC §12)
        wanted = await self._wanted_level(report, allowlist)
        # A re-run of a run the commit shows a check run of replaces it (`shown_level`).
        return wanted if wanted is not None else await self.open_checks.shown_level(report)

    async def _wanted_level(self, report: CheckReport, allowlist: Allowlist) -> Level | None:
        """The level a job's check run is wanted at by the rules alone: its level as
        demotions and overrides leave it and, for L3, the PR's device label."""
        level = await self._levels.level_for_job(report.repo, report.level, report.started_at)
        device = allowlist.device_of(report.repo)
        if wanted_by_rule(level, device, report.labels, flagged=False):
            return level
        if level != Level.L3:
            return None
        repo = _spelling(allowlist, report.repo)
        flagged = await self._store.has_flag(CHECKS_WANTED_FLAG, report.head_sha, repo)
        return level if wanted_by_rule(level, device, report.labels, flagged=flagged) else None

    async def _queue(
        self, job_key: str, state: JobState, *, item_id: str | None = None
    ) -> str | None:
        """Queue a transition's item; None when it is queued already (the queue owns it)."""
        item_id = item_id or check_item_id(job_key, state)
        payload = {"job_key": job_key, "state": str(state)}
        added = await self._store.enqueue(CHECKS_QUEUE, item_id, payload, delay=self.inline_grace)
        return item_id if added else None

    async def _try_inline(
        self,
        item_id: str,
        job_key: str,
        state: JobState,
        *,
        budget: float | None,
        job: Job | None = None,
    ) -> None:
        """One quick attempt; whatever does not finish is the queue's after the grace delay."""
        try:
            async with asyncio.timeout(budget):
                await self.publish(item_id, job_key, state, max_retries=0, job=job)
        except (GitHubError, TimeoutError) as exc:
            CHECK_RUNS.labels(result="deferred").inc()
            log.warning("check run for %s left to the queue: %s", item_id, exc)

    async def _requeue_if_finished(self, job_key: str) -> None:
        """Queue the finished check run again if the job finished while ours was created.

        Its own item may have been created before our in_progress one landed, which
        would leave the PR showing a finished job as running.
        """
        job = await self._store.get_job(job_key)
        if job is None or JobState(job.state) not in TERMINAL_STATES:
            return
        state = JobState(job.state)
        item_id = check_item_id(job_key, state) + ":after-in-progress"
        await self._store.enqueue(CHECKS_QUEUE, item_id, {"job_key": job_key, "state": str(state)})


def _spelling(allowlist: Allowlist, repo: str) -> str:
    """The allowlist's spelling of `repo`: flags and summaries are keyed by it."""
    entry = allowlist.entry(repo)
    return entry.repo if entry is not None else repo

"""L4 flake confirmation (SPEC §11): re-run a failed L4 job once before its check fails.

A blocking check that goes red on a flaky test costs an upstream author a day; one
automatic `rerun-failed-jobs` tells a real failure from a flake. The first failure
asks GitHub for the re-run and leaves the check run in progress ("re-running to
confirm"); the re-run's own report then concludes it — "failed twice" or "passed on
re-run (flaky)". A mark per (repo, run, workflow, job) in the store remembers which
attempt failed, so every instance and every retry of a queue item agrees, and a job
is never re-run automatically twice.

The job reports its failure from one of its own steps, so GitHub usually still has
the run going and answers "already running": the re-run request then waits in the
`rerun` queue and is asked again, with the sweeper's backoff, until GitHub takes it
or refuses it for good — in which case the check run is created again as the failure
it was.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from crcr.github.client import GitHubClient, RerunOutcome
from crcr.github.errors import GitHubError, GitHubForbidden, GitHubNotFound, GitHubUnprocessable
from crcr.relay.allowlist.model import Level
from crcr.relay.checks.check_runs import CheckReport
from crcr.relay.checks.notes import FlakeCheck
from crcr.relay.jobs.dispatch import MERGE_GROUP_EVENT
from crcr.relay.jobs.lifecycle import JobState
from crcr.relay.jobs.queue_handler import HandlerResult
from crcr.stores.roles import Caches, RetryQueue
from crcr.stores.state import LeasedItem


class FlakeRerunStore(Caches, RetryQueue, Protocol):
    """The state store's roles this module uses."""


log = logging.getLogger(__name__)

RERUN_MARKS = "l4-confirm-rerun"
"""Cache namespace: job identity across attempts → `<failed attempt>`, or with `:refused`."""
RERUN_QUEUE = "rerun"
MAX_ATTEMPTS = 15
"""Asking for the re-run while the run still goes: with the backoff, an hour or two."""
REFUSED = ":refused"
EXPIRED = ":expired"
"""The confirming re-run never reported within `CRCR_ZOMBIE_TIMEOUT`: the failure stands."""

Republish = Callable[[str, str], Awaitable[None]]


def rerun_mark_key(report: CheckReport) -> str:
    """The job across its attempts: a re-run keeps the run id and the job's name."""
    return "\x1f".join((report.repo.lower(), report.run_id, report.workflow_name, report.job_name))


class FlakeRerun:
    """Decides where a job stands in its confirmation and asks GitHub for the re-run."""

    def __init__(
        self, store: FlakeRerunStore, github: GitHubClient, *, enabled: bool, ttl: float
    ) -> None:
        self._store = store
        self._github = github
        self.enabled = enabled
        self._ttl = ttl
        self.republish: Republish | None = None
        """Re-creates a finished job's check run (set by the publisher that owns this)."""

    def applies_to(self, report: CheckReport) -> bool:
        """L4 GitHub Actions jobs only: other CI systems cannot be re-run through GitHub.

        Not a merge group's: its own check (SPEC §15) concludes on the first failure
        without waiting, so a confirming run would cost the backend's hardware for nothing.
        """
        return (
            self.enabled
            and report.level >= Level.L4
            and report.event_type != MERGE_GROUP_EVENT
            and report.issuer_kind == "github"
            and report.run_id.isdigit()
            and report.run_attempt.isdigit()
        )

    async def check(self, report: CheckReport, *, max_retries: int | None) -> FlakeCheck | None:
        """Where this report stands; a first failure asks for the re-run (once).

        GitHub refusing the re-run for good (too old, not an Actions run) concludes the
        check as it is; a run still going, or GitHub unwell, leaves it to the queue.
        """
        if not self.applies_to(report) or report.state is not JobState.COMPLETED:
            return None
        attempt = int(report.run_attempt)
        key = rerun_mark_key(report)
        mark = await self._store.cache_get(RERUN_MARKS, key)
        if mark is not None:
            failed, _, refused = mark.partition(":")
            if not failed.isdigit():
                return None
            if refused:
                expired = f":{refused}" == EXPIRED and int(failed) == attempt
                return FlakeCheck.UNCONFIRMED if expired else None
            return _judged(int(failed), attempt, report.check_conclusion)
        if report.check_conclusion != "failure":
            return None
        outcome = await self._ask(report.repo, int(report.run_id), max_retries=max_retries)
        if outcome is False:
            return None
        await self._store.cache_set(RERUN_MARKS, key, str(attempt), self._ttl)
        if outcome is None:
            payload = {"repo": report.repo, "run_id": int(report.run_id), "mark": key}
            payload |= {"job_key": report.job_key, "attempt": attempt}
            await self._store.enqueue(RERUN_QUEUE, f"rerun:{key}", payload)
        log.info("re-running %s attempt %d to confirm its failure", report.check_name, attempt)
        return FlakeCheck.RERUNNING

    async def awaits_rerun(self, report: CheckReport) -> bool:
        """Whether `report` is a failure whose confirming re-run has not reported yet."""
        if not self.applies_to(report) or report.check_conclusion != "failure":
            return False
        mark = await self._store.cache_get(RERUN_MARKS, rerun_mark_key(report))
        return mark == report.run_attempt

    async def give_up(self, report: CheckReport) -> None:
        """Let `report`'s failure stand: its confirming re-run never reported."""
        mark = f"{report.run_attempt}{EXPIRED}"
        await self._store.cache_set(RERUN_MARKS, rerun_mark_key(report), mark, self._ttl)
        log.info("%s: the confirming re-run never reported; the failure stands", report.check_name)

    async def handle_item(self, item: LeasedItem) -> HandlerResult:
        """Queue handler of "rerun": ask again; give up (the check fails) when it is no use."""
        payload = item.payload
        outcome = await self._ask(str(payload["repo"]), int(payload["run_id"]), max_retries=1)
        if outcome is True:
            return HandlerResult.DONE
        if outcome is None and item.attempts + 1 < MAX_ATTEMPTS:
            return HandlerResult.RETRY
        mark = f"{payload['attempt']}{REFUSED}"
        await self._store.cache_set(RERUN_MARKS, str(payload["mark"]), mark, self._ttl)
        if self.republish is not None:
            await self.republish(str(payload["job_key"]), "rerun-refused")
        return HandlerResult.DONE

    async def _ask(self, repo: str, run_id: int, *, max_retries: int | None) -> bool | None:
        """True: GitHub re-runs it; False: it never will; None: not now (ask again)."""
        try:
            outcome = await self._github.rerun_failed_jobs(repo, run_id, max_retries=max_retries)
        except (GitHubForbidden, GitHubNotFound, GitHubUnprocessable) as exc:
            log.warning("cannot re-run %s run %s to confirm a failure: %s", repo, run_id, exc)
            return False
        except GitHubError as exc:
            log.warning("re-run of %s run %s left for later: %s", repo, run_id, exc)
            return None
        return None if outcome is RerunOutcome.ALREADY_RUNNING else True


def _judged(failed_attempt: int, attempt: int, conclusion: str | None) -> FlakeCheck | None:
    """The confirmation state of `attempt`, given the attempt whose failure was re-run."""
    if attempt == failed_attempt:
        return FlakeCheck.RERUNNING
    if attempt == failed_attempt + 1 and conclusion == "failure":
        return FlakeCheck.FAILED_TWICE
    if attempt == failed_attempt + 1 and conclusion == "success":
        return FlakeCheck.FLAKY
    return None

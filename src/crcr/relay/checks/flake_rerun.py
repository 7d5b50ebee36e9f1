"""L4 flake confirmation (SPEC §11): re-run a failed L4 job once before its check fails.

A blocking check that goes red on a flaky test costs an upstream author a day; one
automatic `rerun-failed-jobs` tells a real failure from a flake. The first failure
asks GitHub for the re-run and leaves the check run in progress ("re-running to
confirm"); the re-run's own report then concludes it — "failed twice" or "passed on
re-run (flaky)". A mark per (repo, run, workflow, job) in the store remembers which
attempt failed, so every instance and every retry of a queue item agrees, and a job
is never re-run automatically twice.
"""

from __future__ import annotations

import logging

from crcr.github.client import GitHubClient
from crcr.github.errors import GitHubForbidden, GitHubNotFound, GitHubUnprocessable
from crcr.relay.allowlist.model import Level
from crcr.relay.callback.job_state import JobState
from crcr.relay.checks.check_runs import JobReport
from crcr.relay.checks.notes import FlakeCheck
from crcr.stores.state import StateStore

log = logging.getLogger(__name__)

RERUN_MARKS = "l4-confirm-rerun"
"""Cache namespace: job identity across attempts → the attempt whose failure was re-run."""


def rerun_mark_key(report: JobReport) -> str:
    """The job across its attempts: a re-run keeps the run id and the job's name."""
    return "\x1f".join((report.repo.lower(), report.run_id, report.workflow_name, report.job_name))


class FlakeRerun:
    """Decides where a job stands in its confirmation and asks GitHub for the re-run."""

    def __init__(
        self, store: StateStore, github: GitHubClient, *, enabled: bool, ttl: float
    ) -> None:
        self._store = store
        self._github = github
        self.enabled = enabled
        self._ttl = ttl

    def applies_to(self, report: JobReport) -> bool:
        """L4 GitHub Actions jobs only: other CI systems cannot be re-run through GitHub."""
        return (
            self.enabled
            and report.level >= Level.L4
            and report.issuer_kind == "github"
            and report.run_id.isdigit()
            and report.run_attempt.isdigit()
        )

    async def check(self, report: JobReport, *, max_retries: int | None) -> FlakeCheck | None:
        """Where this report stands; a first failure asks for the re-run (once).

        A GitHub outage raises (the check run's queue item is retried); GitHub refusing
        the re-run for good (too old, not an Actions run) concludes the check as it is.
        """
        if not self.applies_to(report) or report.state is not JobState.COMPLETED:
            return None
        attempt = int(report.run_attempt)
        key = rerun_mark_key(report)
        mark = await self._store.cache_get(RERUN_MARKS, key)
        if mark is not None and mark.isdigit():
            return _judged(int(mark), attempt, report.check_conclusion)
        if report.check_conclusion != "failure":
            return None
        try:
            await self._github.rerun_failed_jobs(
                report.repo, int(report.run_id), max_retries=max_retries
            )
        except (GitHubForbidden, GitHubNotFound, GitHubUnprocessable) as exc:
            log.warning("cannot re-run %s to confirm its failure: %s", report.check_name, exc)
            return None
        await self._store.cache_set(RERUN_MARKS, key, str(attempt), self._ttl)
        log.info("re-running %s attempt %d to confirm its failure", report.check_name, attempt)
        return FlakeCheck.RERUNNING


def _judged(failed_attempt: int, attempt: int, conclusion: str | None) -> FlakeCheck | None:
    """The confirmation state of `attempt`, given the attempt whose failure was re-run."""
    if attempt == failed_attempt:
        return FlakeCheck.RERUNNING
    if attempt == failed_attempt + 1 and conclusion == "failure":
        return FlakeCheck.FAILED_TWICE
    if attempt == failed_attempt + 1 and conclusion == "success":
        return FlakeCheck.FLAKY
    return None

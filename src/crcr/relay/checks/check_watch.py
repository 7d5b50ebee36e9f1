"""Conclude check runs their job left open: the watches on the sweeper's deadline list (SPEC §10.2).

The sweeper's leader hands every due deadline-list key under `open_checks.WATCH_PREFIX`
to `handle_deadline`; `open_checks.watch_step` says what to do. The final check run
goes through the publisher (`republish`), which publishes it at the level the open one
was created at.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Protocol

from crcr.github.client import GitHubClient
from crcr.github.errors import GitHubNotFound, GitHubUnprocessable
from crcr.relay.checks.check_runs import report_from_job
from crcr.relay.checks.flake_rerun import FlakeRerun
from crcr.relay.checks.open_checks import (
    MAX_CONCLUDE_TRIES,
    RECHECK,
    OpenCheck,
    OpenChecks,
    WatchStep,
    lost_check_fields,
    watch_step,
    watched,
)
from crcr.relay.jobs.job import Job
from crcr.stores.roles import JobStates

log = logging.getLogger(__name__)

Republish = Callable[[str, str], Awaitable[None]]


class CheckWatchStore(JobStates, Protocol):
    """The state store's roles this module uses (the open checks bring their own)."""


class CheckWatch:
    """Looks at one open check run when its watch is due, and concludes it once its job ended."""

    def __init__(
        self,
        store: CheckWatchStore,
        open_checks: OpenChecks,
        flake: FlakeRerun,
        github: GitHubClient,
        upstream: str,
        republish: Republish,
    ) -> None:
        self._store = store
        self._open = open_checks
        self._flake = flake
        self._github = github
        self._upstream = upstream
        self._republish = republish

    async def handle_deadline(self, key: str, now: float) -> bool:
        """The sweeper's handler of a due watch; True when the watch may leave the list.

        A watch still needed sets its own next deadline and answers False. A GitHub
        outage raises: the sweeper logs it and comes back to the watch later.
        """
        target = watched(key)
        if target is None:
            return True
        head_sha, name = target
        open_check = await self._open.get(head_sha, name)
        if open_check is None:
            return True  # concluded since: the usual end of a watch
        job = Job.readable(open_check.job_key, await self._store.get_job(open_check.job_key))
        if job is None:
            return await self._time_out_lost(open_check)
        # At the level the check run was opened at, as its publisher treats it: a job
        # recorded lower (a demotion merged since) still awaits the L4 re-run it asked for.
        report = replace(report_from_job(job), level=open_check.level)
        confirming = await self._flake.awaits_rerun(report)
        step, at = watch_step(
            job,
            confirming=confirming,
            now=now,
            zombie_timeout=self._open.zombie_timeout,
            slack=self._open.watch_slack,
        )
        if step is WatchStep.WAIT:
            await self._open.look_again(head_sha, name, at)
            return False
        if open_check.tries >= MAX_CONCLUDE_TRIES:
            log.warning(
                "check run %s of job %s stays open: %d final check runs asked for in vain",
                name,
                job.key,
                open_check.tries,
            )
            await self._open.forget(head_sha, name)
            return True
        if step is WatchStep.GIVE_UP_CONFIRMATION:
            await self._flake.give_up(report)
        await self._open.tried(head_sha, name, open_check)
        await self._republish(job.key, f"watch-{open_check.tries + 1}")
        if await self._open.get(head_sha, name) is None:
            return True
        # Left to the checks queue (GitHub unwell): look again once it had its chance.
        await self._open.look_again(head_sha, name, now + RECHECK)
        return False

    async def _time_out_lost(self, open_check: OpenCheck) -> bool:
        """Conclude an open check run whose job's record is gone, from what was kept."""
        fields = lost_check_fields(open_check)
        head_sha, name = str(fields.get("head_sha")), str(fields.get("name"))
        try:
            await self._github.create_check_run(self._upstream, max_retries=1, **fields)
        except (GitHubNotFound, GitHubUnprocessable) as exc:
            log.warning("cannot time out check run %s: %s", name, exc)
        await self._open.forget(head_sha, name)
        return True

"""The `check-watch` queue's handler: conclude check runs their job left open (SPEC §10.2).

The sweeper drains the queue like any other; `open_checks` says what each item is
about and `open_checks.watch_step` what to do. The final check run goes through the
publisher (`republish`), which publishes it at the level the open one was created at.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
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
)
from crcr.relay.jobs.job import Job
from crcr.relay.jobs.queue_handler import HandlerResult
from crcr.stores.roles import JobStates
from crcr.stores.state import LeasedItem

log = logging.getLogger(__name__)

Republish = Callable[[str, str], Awaitable[None]]


class CheckWatchStore(JobStates, Protocol):
    """The state store's roles this module uses (the open checks bring their own)."""


class CheckWatch:
    """Looks at one open check run per item, and concludes it once its job has ended."""

    def __init__(
        self,
        store: CheckWatchStore,
        open_checks: OpenChecks,
        flake: FlakeRerun,
        github: GitHubClient,
        upstream: str,
        republish: Republish,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._open = open_checks
        self._flake = flake
        self._github = github
        self._upstream = upstream
        self._republish = republish
        self.clock = clock

    async def handle_item(self, item: LeasedItem) -> HandlerResult:
        """Queue handler of "check-watch"; a GitHub outage raises, and the sweeper retries."""
        payload = item.payload
        open_check = await self._open.get(str(payload["head_sha"]), str(payload["name"]))
        if open_check is None:
            return HandlerResult.DONE  # concluded since: the usual end of a watch
        job = Job.readable(open_check.job_key, await self._store.get_job(open_check.job_key))
        confirming = False
        if job is not None:
            confirming = await self._flake.awaits_rerun(report_from_job(job))
        now = self.clock()
        step, at = watch_step(
            job,
            confirming=confirming,
            now=now,
            zombie_timeout=self._open.zombie_timeout,
            slack=self._open.watch_slack,
        )
        if step is WatchStep.WAIT:
            await self._open.look_again(payload, at, now)
            return HandlerResult.DONE
        if job is None:
            return await self._time_out_lost(open_check)
        if step is WatchStep.GIVE_UP_CONFIRMATION:
            await self._flake.give_up(report_from_job(job))
        tries = int(payload.get("tries") or 0) + 1
        await self._republish(job.key, f"watch-{tries}")
        if await self._open.get(str(payload["head_sha"]), str(payload["name"])) is None:
            return HandlerResult.DONE
        if tries >= MAX_CONCLUDE_TRIES:
            log.warning(
                "check run %s of job %s is still open after %d final check runs asked for",
                payload["name"],
                job.key,
                tries,
            )
            return HandlerResult.DONE
        # Left to the checks queue (GitHub unwell): look again once it had its chance.
        await self._open.look_again({**payload, "tries": tries}, now + RECHECK, now)
        return HandlerResult.DONE

    async def _time_out_lost(self, open_check: OpenCheck) -> HandlerResult:
        """Conclude an open check run whose job's record is gone, from what was kept."""
        fields = lost_check_fields(open_check)
        try:
            await self._github.create_check_run(self._upstream, max_retries=1, **fields)
        except (GitHubNotFound, GitHubUnprocessable) as exc:
            log.warning("cannot time out check run %s: %s", fields.get("name"), exc)
            return HandlerResult.DROP
        await self._open.forget(str(fields.get("head_sha")), str(fields.get("name")))
        return HandlerResult.DONE

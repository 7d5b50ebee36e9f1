"""Check runs crcr left in progress, until one of their name concludes (SPEC §10.2, invariant 1).

An in-progress check run is a promise: on an L4 backend it blocks the upstream PR until
a later check run of its name concludes it. Levels change under running jobs (a
temporary demotion, an allowlist edit, a revocation), and a job that would get no check
run if it started now must still conclude the one it has. So every in-progress check
run is recorded per (head SHA, check name) — GitHub shows the newest run of a name —
with the level it was created at:

- the job's later transitions, and its confirming re-run (L4 flake confirmation, a new
  attempt of the same run), get their check runs at that level whatever the level is
  by then (`OpenChecks.level_for`);
- a watch item in the `check-watch` queue, drained by the sweeper, looks again once the
  job should have ended (`watch_step`): a job that ended without its final check run
  gets it; a confirming re-run that never reported within `CRCR_ZOMBIE_TIMEOUT` of the
  failure leaves the failure standing; a job whose record is gone is timed out from
  what the record here kept. No check run outlives its job by more than
  `CRCR_ZOMBIE_TIMEOUT` plus a sweep.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from crcr.relay.allowlist.model import Level
from crcr.relay.checks.check_runs import TERMINAL_STATES, CheckReport
from crcr.relay.checks.flake_rerun import rerun_mark_key
from crcr.relay.jobs.job import Job
from crcr.stores.roles import Caches, RetryQueue

OPEN_CHECKS = "open-check-run"
"""Cache namespace: `<head SHA>\\x1f<check name>` → the in-progress check run (`OpenCheck`)."""
WATCH_QUEUE = "check-watch"
WATCH_SLACK = 15.0
"""Seconds a watch waits beyond a job's zombie deadline: one sweep, so that the zombie
pass times the job out (and concludes its check run) before the watch looks."""
RECHECK = 60.0
"""Seconds before a watch looks again after it asked for a final check run."""
MAX_CONCLUDE_TRIES = 5
"""Final check runs a watch asks for before it gives up (with a warning): GitHub refusing
each for good is a fault a person must look at, not something to ask forever."""


class OpenChecksStore(Caches, RetryQueue, Protocol):
    """The state store's roles this module uses."""


@dataclass(frozen=True)
class OpenCheck:
    """An in-progress check run: whose it is, the level it was created at, and the
    fields that can conclude it should its job's record be gone."""

    job_key: str
    run: str
    """The job across its attempts (`flake_rerun.rerun_mark_key`)."""
    level: Level
    fields: Mapping[str, Any]

    def to_store(self) -> str:
        """The cached value (JSON)."""
        record = {"job_key": self.job_key, "run": self.run, "level": str(self.level)}
        return json.dumps({**record, "fields": dict(self.fields)})

    @classmethod
    def from_store(cls, value: str) -> OpenCheck | None:
        """Rebuild one; None for a value that is not one (it is then ignored)."""
        try:
            record = json.loads(value)
            return cls(
                str(record["job_key"]),
                str(record["run"]),
                Level[str(record["level"])],
                dict(record["fields"]),
            )
        except (ValueError, KeyError, TypeError):
            return None

    def belongs_to(self, report: CheckReport) -> bool:
        """Whether `report` is this check run's job, or another attempt of it."""
        return report.job_key == self.job_key or rerun_mark_key(report) == self.run


class WatchStep(StrEnum):
    """What a watch does about an open check run."""

    WAIT = "wait"  # its job may still end on its own: look again later
    CONCLUDE = "conclude"  # its job ended: create the job's final check run
    GIVE_UP_CONFIRMATION = "give_up_confirmation"  # the re-run never reported
    LOST = "lost"  # the job's record is gone: time the check run out


def watch_step(
    job: Job | None,
    *,
    confirming: bool,
    now: float,
    zombie_timeout: float,
    slack: float = WATCH_SLACK,
) -> tuple[WatchStep, float]:
    """What to do about an open check run of `job`, and when to look again (for WAIT).

    `confirming`: the job failed and awaits its confirming re-run (L4). A job in
    progress is the zombie pass's until its deadline; a failure awaiting its re-run
    waits `zombie_timeout` from its end, as long as a job may run.
    """
    if job is None:
        return WatchStep.LOST, now
    if job.state not in TERMINAL_STATES:
        started = job.in_progress_at if job.in_progress_at is not None else now
        deadline = started + zombie_timeout + slack
        # Past it, the zombie pass is behind (no leader for a while): look again later.
        return WatchStep.WAIT, deadline if deadline > now else now + RECHECK
    if not confirming:
        return WatchStep.CONCLUDE, now
    ended = job.execution_time_end if job.execution_time_end is not None else now
    due = ended + zombie_timeout
    if now < due:
        return WatchStep.WAIT, due
    return WatchStep.GIVE_UP_CONFIRMATION, now


def lost_check_fields(open_check: OpenCheck) -> dict[str, Any]:
    """A timed-out check run concluding an open one whose job's record is gone."""
    kept = {k: v for k, v in open_check.fields.items() if k in ("name", "head_sha")}
    kept |= {k: v for k, v in open_check.fields.items() if k in ("external_id", "details_url")}
    summary = (
        "The relay no longer holds this job's record (it outlived `CRCR_STATUS_TTL`) "
        "and never heard how it ended; the relay timed it out."
    )
    output = {"title": "Timed out", "summary": summary}
    return {**kept, "status": "completed", "conclusion": "timed_out", "output": output}


def open_check_key(head_sha: str, check_name: str) -> str:
    """The cache key of the check runs of one name on one commit."""
    return f"{head_sha}\x1f{check_name}"


class OpenChecks:
    """The record of in-progress check runs, and their watch items."""

    def __init__(
        self,
        store: OpenChecksStore,
        *,
        ttl: float,
        zombie_timeout: float,
        watch_slack: float = WATCH_SLACK,
    ) -> None:
        self._store = store
        self._ttl = ttl
        self.zombie_timeout = zombie_timeout
        self.watch_slack = watch_slack

    async def get(self, head_sha: str, check_name: str) -> OpenCheck | None:
        """The in-progress check run of that name on that commit, if crcr left one."""
        value = await self._store.cache_get(OPEN_CHECKS, open_check_key(head_sha, check_name))
        return None if value is None else OpenCheck.from_store(value)

    async def level_for(self, report: CheckReport) -> Level | None:
        """The level `report` is published at because its job has a check run open.

        None when it has none: the usual rules (level, demotion, label) decide.
        """
        open_check = await self.get(report.head_sha, report.check_name)
        if open_check is None or not open_check.belongs_to(report):
            return None
        return open_check.level

    async def opening(self, report: CheckReport, level: Level, fields: Mapping[str, Any]) -> None:
        """Record an in-progress check run *before* it is created, and queue its watch.

        Before: a relay that dies between creating it and recording it would leave a
        check run nobody watches; one recorded but never created only costs a final
        check run that concludes nothing.
        """
        open_check = OpenCheck(report.job_key, rerun_mark_key(report), level, fields)
        key = open_check_key(report.head_sha, report.check_name)
        await self._store.cache_set(OPEN_CHECKS, key, open_check.to_store(), self._ttl)
        payload = {"head_sha": report.head_sha, "name": report.check_name, "tries": 0}
        delay = self.zombie_timeout + self.watch_slack
        await self._store.enqueue(WATCH_QUEUE, f"watch:{report.job_key}", payload, delay=delay)

    async def concluded(self, report: CheckReport) -> None:
        """Forget the open check run `report`'s concluded check run supersedes.

        Only its own job's: an open check run of another run of the same name (a newer
        dispatch on the same commit) is left to its own job.
        """
        open_check = await self.get(report.head_sha, report.check_name)
        if open_check is not None and open_check.belongs_to(report):
            await self._store.cache_delete(
                OPEN_CHECKS, open_check_key(report.head_sha, report.check_name)
            )

    async def forget(self, head_sha: str, check_name: str) -> None:
        """Forget an open check run concluded without its job (`lost_check_fields`)."""
        await self._store.cache_delete(OPEN_CHECKS, open_check_key(head_sha, check_name))

    async def look_again(self, payload: Mapping[str, Any], at: float, now: float) -> None:
        """Queue the next look of a watch, at `at` (epoch seconds).

        A new item rather than the current one released: a release counts as a failure
        (backoff, and the sweeper rests the queue), and a watch waiting is no failure.
        The id names the time, so two workers handling the same item queue one.
        """
        head_sha, name = str(payload["head_sha"]), str(payload["name"])
        item_id = f"watch:{open_check_key(head_sha, name)}@{int(at)}"
        await self._store.enqueue(WATCH_QUEUE, item_id, dict(payload), delay=max(0.0, at - now))

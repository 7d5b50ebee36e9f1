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
- a watch on the sweeper's deadline list (beside the jobs' own deadlines, under a key
  no job key can have) comes due once the job should have ended, and the sweeper's
  leader hands it to `check_watch` (`watch_step` decides): a job that ended without its
  final check run gets it; a confirming re-run that never reported within
  `CRCR_ZOMBIE_TIMEOUT` of the failure leaves the failure standing; a job whose record
  is gone is timed out from what the record here kept. No check run outlives its job by
  more than `CRCR_ZOMBIE_TIMEOUT` plus a sweep.

The deadline list rather than a delayed queue item: a watch waits hours, and a queue
holding it would show as a backlog (`crcr_queue_oldest_age_seconds`, the sweeper's busy
pace) when nothing is wrong.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Protocol

from crcr.relay.allowlist.model import Level
from crcr.relay.checks.check_runs import TERMINAL_STATES, CheckReport
from crcr.relay.checks.flake_rerun import rerun_mark_key
from crcr.relay.jobs.job import Job
from crcr.stores.roles import Caches, Deadlines

SHOWN_CHECKS = "shown-check-run"
"""Cache namespace: `<head SHA>\x1f<check name>` → the run and level of the newest check
run crcr created for that name on that commit, in progress or concluded."""
OPEN_CHECKS = "open-check-run"
"""Cache namespace: `<head SHA>\\x1f<check name>` → the in-progress check run (`OpenCheck`)."""
WATCH_PREFIX = "check-watch\x1f"
"""Deadline-list keys of watches: `<prefix><head SHA>\\x1f<check name>`. Job keys are
%-escaped (`jobs.lifecycle.job_store_key`), so none starts with a control character."""
WATCH_SLACK = 15.0
"""Seconds a watch waits beyond a job's zombie deadline: one sweep, so that the zombie
pass times the job out (and concludes its check run) before the watch looks."""
RECHECK = 60.0
"""Seconds before a watch looks again after it asked for a final check run, or when
the zombie pass is behind (no leader for a while) and the job still runs."""
MAX_CONCLUDE_TRIES = 5
"""Final check runs a watch asks for before it gives up (with a warning): GitHub refusing
each for good is a fault a person must look at, not something to ask forever."""


class OpenChecksStore(Caches, Deadlines, Protocol):
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
    tries: int = 0
    """Final check runs a watch asked for so far (`MAX_CONCLUDE_TRIES`)."""

    def to_store(self) -> str:
        """The cached value (JSON)."""
        record = {"job_key": self.job_key, "run": self.run, "level": str(self.level)}
        return json.dumps({**record, "fields": dict(self.fields), "tries": self.tries})

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
                int(record.get("tries") or 0),
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


def watch_key(head_sha: str, check_name: str) -> str:
    """The deadline-list key of the watch over one name on one commit."""
    return WATCH_PREFIX + open_check_key(head_sha, check_name)


def watched(key: str) -> tuple[str, str] | None:
    """(head SHA, check name) of a watch's deadline-list key; None for any other key."""
    if not key.startswith(WATCH_PREFIX):
        return None
    head_sha, separator, name = key.removeprefix(WATCH_PREFIX).partition("\x1f")
    return (head_sha, name) if separator and head_sha and name else None


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

    async def ends_one_left_open(self, report: CheckReport) -> bool:
        """Whether `report` ends a check run still open for its job although the job shows
        nothing upstream: a superseded job's late report leaves the `cancelled` check run
        of its supersession alone, but one the supersession found waiting for the
        confirming re-run the relay asked for stayed open, and must end (SPEC §10.2)."""
        return report.state in TERMINAL_STATES and await self.level_for(report) is not None

    async def shown(self, report: CheckReport, level: Level) -> None:
        """Remember that the commit shows a check run of `report`'s run, created at `level`."""
        key = open_check_key(report.head_sha, report.check_name)
        value = json.dumps({"run": rerun_mark_key(report), "level": str(level)})
        await self._store.cache_set(SHOWN_CHECKS, key, value, self._ttl)

    async def shown_level(self, report: CheckReport) -> Level | None:
        """The level of the check run the commit shows for `report`'s run, if crcr made one.

        GitHub shows the newest check run of a name: once crcr has shown one for a run,
        a later attempt of that run (a re-run) must replace it even where the level
        would now give it none (a demotion, an override), or the check says what an
        older attempt did while the HUD says what the newest did. A new run of the name
        (a new dispatch) follows the level rules.
        """
        key = open_check_key(report.head_sha, report.check_name)
        value = await self._store.cache_get(SHOWN_CHECKS, key)
        try:
            record = json.loads(value) if value is not None else None
            if record is None or record["run"] != rerun_mark_key(report):
                return None
            return Level[record["level"]]
        except (ValueError, KeyError, TypeError):
            return None

    async def opening(
        self, report: CheckReport, level: Level, fields: Mapping[str, Any], *, now: float
    ) -> None:
        """Record an in-progress check run *before* it is created, and set its watch.

        Before: a relay that dies between creating it and recording it would leave a
        check run nobody watches; one recorded but never created only costs a final
        check run that concludes nothing.
        """
        open_check = OpenCheck(report.job_key, rerun_mark_key(report), level, fields)
        key = open_check_key(report.head_sha, report.check_name)
        await self._store.cache_set(OPEN_CHECKS, key, open_check.to_store(), self._ttl)
        due = now + self.zombie_timeout + self.watch_slack
        await self._store.track_deadline(watch_key(report.head_sha, report.check_name), due)

    async def concluded(self, report: CheckReport) -> None:
        """Forget the open check run `report`'s concluded check run supersedes.

        Only its own job's: an open check run of another run of the same name (a newer
        dispatch on the same commit) is left to its own job.
        """
        open_check = await self.get(report.head_sha, report.check_name)
        if open_check is not None and open_check.belongs_to(report):
            await self.forget(report.head_sha, report.check_name)

    async def forget(self, head_sha: str, check_name: str) -> None:
        """Forget a concluded check run, and its watch (not waited for: a watch left
        costs one visit that finds nothing open)."""
        await self._store.cache_delete(OPEN_CHECKS, open_check_key(head_sha, check_name))
        await self._store.untrack_deadline(watch_key(head_sha, check_name), wait=False)

    async def tried(self, head_sha: str, check_name: str, open_check: OpenCheck) -> None:
        """Count one final check run asked for by a watch."""
        counted = replace(open_check, tries=open_check.tries + 1)
        key = open_check_key(head_sha, check_name)
        await self._store.cache_set(OPEN_CHECKS, key, counted.to_store(), self._ttl)

    async def look_again(self, head_sha: str, check_name: str, at: float) -> None:
        """Set the watch over that name on that commit to come due at `at` (epoch)."""
        await self._store.track_deadline(watch_key(head_sha, check_name), at)

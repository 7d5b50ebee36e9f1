"""The demotions in force, kept in the state store so that every instance agrees.

`refresh` (run by the sweeper's leader each pass) starts and ends demotions from the
HUD's verdicts; `level_for_job` is what the check-run publisher asks before it creates a
check run; `demotions` is the HUD's `DemotionLookup`, so the level status shows them.
Reads are cached for a few seconds per instance: a callback of an L3/L4 job asks on
every transition, and a demotion starting a few seconds late changes nothing that
matters.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime

from prometheus_client import Gauge

from crcr.relay.allowlist.model import Allowlist, Level
from crcr.relay.levels.demotion import (
    DEMOTABLE,
    Demotion,
    DemotionPlan,
    level_for_job,
    plan_demotions,
)
from crcr.relay.levels.status import BackendStatus
from crcr.stores.roles import Demotions

log = logging.getLogger(__name__)

# Every worker reads the same shared demotions: across workers, the latest reading counts.
DEMOTED_BACKENDS = Gauge(
    "crcr_demoted_backends",
    "Backends temporarily demoted (SPEC §10.1), by the level they were demoted from.",
    ["level"],
    multiprocess_mode="mostrecent",
)


class DemotionBook:
    """Temporary demotions: started, ended and read through the state store."""

    def __init__(
        self,
        store: Demotions,
        *,
        cache_seconds: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._store = store
        self._cache_seconds = cache_seconds
        self._clock = clock
        self._now = now
        self._cached: dict[str, Demotion] = {}
        self._fresh_until = float("-inf")

    async def current(self) -> dict[str, Demotion]:
        """The demotions in force, by lower-cased repo (at most `cache_seconds` old)."""
        if self._clock() < self._fresh_until:
            return self._cached
        demotions: dict[str, Demotion] = {}
        for key, record in (await self._store.demotions()).items():
            try:
                demotions[key] = Demotion.from_store(key, record)
            except (KeyError, ValueError):
                log.warning("ignoring a malformed demotion record for %s", key)
        self._remember(demotions)
        return demotions

    async def level_for_job(self, repo: str, level: Level, started_at: float | None) -> Level:
        """The level a job of `repo`, recorded at `level` when it started, is treated at."""
        if level not in DEMOTABLE:
            return level
        return level_for_job(level, started_at, (await self.current()).get(repo.lower()))

    async def demotions(self) -> Mapping[str, Demotion]:
        """The HUD's `DemotionLookup`: each demoted repo's `since` and `pr_url`."""
        return {demotion.repo: demotion for demotion in (await self.current()).values()}

    async def refresh(
        self, statuses: Mapping[str, BackendStatus], allowlist: Allowlist
    ) -> DemotionPlan:
        """Start and end demotions as the verdicts and the allowlist say (idempotent)."""
        self._fresh_until = float("-inf")
        plan = plan_demotions(statuses, allowlist, await self.current(), self._now())
        for demotion in plan.start:
            if await self._store.add_demotion(demotion.repo, demotion.to_store()):
                log.warning(
                    "%s temporarily demoted from %s: its level criteria are not met",
                    demotion.repo,
                    demotion.from_level,
                )
        for key in plan.end:
            if await self._store.remove_demotion(key):
                log.info("temporary demotion of %s ended", key)
        self._fresh_until = float("-inf")
        await self.current()
        return plan

    async def record_pull_request(self, repo: str, url: str | None) -> None:
        """Remember the demotion's pull request (shown on the levels page)."""
        await self._store.update_demotion(repo, {"pr_url": url})
        self._fresh_until = float("-inf")

    def _remember(self, demotions: dict[str, Demotion]) -> None:
        self._cached = demotions
        self._fresh_until = self._clock() + self._cache_seconds
        for level in sorted(DEMOTABLE):
            count = sum(1 for d in demotions.values() if d.from_level == level)
            DEMOTED_BACKENDS.labels(level=str(level)).set(count)

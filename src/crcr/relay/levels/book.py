"""The level governance in force, kept in the state store so that every instance agrees.

Temporary demotions (SPEC §10.1), declines and overrides (§10.2). `refresh` (run by the
sweeper's leader each pass) starts and ends demotions from the HUD's verdicts, never
for a backend whose demotion was declined; `level_for_job` is what the check-run
publisher asks before it creates a check run; `standings` is what the level status
shows of each backend. Reads are cached for `cache_seconds` per instance: a callback of
an L3/L4 job asks on every transition, and a decline or an override must hold on every
instance within 5 s (SPEC §10.2), so the cache lasts 2.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

from prometheus_client import Gauge

from crcr.relay.allowlist.model import Allowlist, Level
from crcr.relay.levels.demotion import (
    DEMOTABLE,
    Demotion,
    DemotionPlan,
    level_for_job,
    plan_demotions,
)
from crcr.relay.levels.history import LevelHistory
from crcr.relay.levels.standing import DECLINE, OVERRIDE, Decline, Override, treated_as
from crcr.relay.levels.status import BackendStatus
from crcr.stores.roles import Demotions, GovernanceRecords

log = logging.getLogger(__name__)

# Every worker reads the same shared demotions: across workers, the latest reading counts.
DEMOTED_BACKENDS = Gauge(
    "crcr_demoted_backends",
    "Backends temporarily demoted (SPEC §10.1), by the level they were demoted from.",
    ["level"],
    multiprocess_mode="mostrecent",
)
CACHE_SECONDS = 2.0
_T = TypeVar("_T")


class LevelRecords(Demotions, GovernanceRecords, Protocol):
    """The state store's roles the book keeps its records in."""


@dataclass(frozen=True)
class Governance:
    """What is in force, by lower-cased repo: demotions, declines and overrides."""

    demotions: Mapping[str, Demotion] = field(default_factory=dict)
    declines: Mapping[str, Decline] = field(default_factory=dict)
    overrides: Mapping[str, Override] = field(default_factory=dict)

    def declined(self, repo: str, now: datetime) -> Decline | None:
        """The decline that still snoozes `repo`'s demotions, if any."""
        found = self.declines.get(repo.lower())
        return found if found is not None and found.in_force(now) else None

    def override(self, repo: str, now: datetime) -> Override | None:
        """The override in force for `repo`, if any."""
        found = self.overrides.get(repo.lower())
        return found if found is not None and found.in_force(now) else None


class DemotionBook:
    """Demotions, declines and overrides: started, ended and read through the state store."""

    def __init__(
        self,
        store: LevelRecords,
        *,
        cache_seconds: float = CACHE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._store = store
        self.history = LevelHistory(store)
        self._cache_seconds = cache_seconds
        self._clock = clock
        self.now = now
        self._cached = Governance()
        self._fresh_until = float("-inf")

    async def governance(self) -> Governance:
        """What is in force (at most `cache_seconds` old)."""
        if self._clock() < self._fresh_until:
            return self._cached
        demotions = _parsed(await self._store.demotions(), Demotion.from_store, "demotion")
        declines = _parsed(
            await self._store.governance(DECLINE), lambda _, r: Decline.from_store(r), "decline"
        )
        overrides = _parsed(
            await self._store.governance(OVERRIDE), lambda _, r: Override.from_store(r), "override"
        )
        self._remember(Governance(demotions, declines, overrides))
        return self._cached

    async def current(self) -> dict[str, Demotion]:
        """The demotions in force, by lower-cased repo."""
        return dict((await self.governance()).demotions)

    def forget(self) -> None:
        """Read the store again next time (after this instance changed it)."""
        self._fresh_until = float("-inf")

    async def level_for_job(self, repo: str, level: Level, started_at: float | None) -> Level:
        """The level a job of `repo`, recorded at `level` when it started, is treated at.

        A demotion spares jobs that started before it; an override holds for every job
        from the moment it is set.
        """
        governance = await self.governance()
        treated = level
        if level in DEMOTABLE:
            treated = level_for_job(level, started_at, governance.demotions.get(repo.lower()))
        return treated_as(treated, None, governance.override(repo, self.now()), self.now())

    async def demotions(self) -> Mapping[str, Demotion]:
        """Each demoted repo's demotion, by the repo's spelling."""
        return {demotion.repo: demotion for demotion in (await self.current()).values()}

    async def refresh(
        self, statuses: Mapping[str, BackendStatus], allowlist: Allowlist
    ) -> DemotionPlan:
        """Start and end demotions as the verdicts, the allowlist and declines say.

        Idempotent; a backend whose demotion was declined is not demoted again until
        its snooze ends. The allowlist's levels are followed into the level history.
        """
        self.forget()
        now = self.now()
        governance = await self.governance()
        plan = plan_demotions(statuses, allowlist, governance.demotions, now)
        for demotion in plan.start:
            if governance.declined(demotion.repo, now) is not None:
                continue
            if await self._store.add_demotion(demotion.repo, demotion.to_store()):
                log.warning(
                    "%s temporarily demoted from %s: its level criteria are not met",
                    demotion.repo,
                    demotion.from_level,
                )
                detail = f"{demotion.from_level} → {demotion.to_level}"
                await self.history.open(demotion.repo, "demotion", now, detail)
        for key in plan.end:
            await self.end_demotion(key, now)
        await self.history.follow_levels(allowlist, now)
        self.forget()
        await self.governance()
        return plan

    async def end_demotion(self, repo: str, now: datetime) -> bool:
        """End `repo`'s temporary demotion now; False if it had none."""
        demotion = (await self.governance()).demotions.get(repo.lower())
        removed = await self._store.remove_demotion(repo)
        if removed:
            log.info("temporary demotion of %s ended", repo)
            await self.history.close(demotion.repo if demotion else repo, "demotion", now)
        self.forget()
        return removed

    async def record_pull_request(self, repo: str, url: str | None) -> None:
        """Remember the demotion's pull request (shown on the levels page)."""
        await self._store.update_demotion(repo, {"pr_url": url})
        self.forget()

    async def put(self, kind: str, repo: str, record: Mapping[str, Any]) -> None:
        """Keep a decline's or an override's record."""
        await self._store.put_governance(kind, repo.lower(), record)
        self.forget()

    async def remove(self, kind: str, repo: str) -> bool:
        """Remove a decline's or an override's record; False if there was none."""
        removed = await self._store.remove_governance(kind, repo.lower())
        self.forget()
        return removed

    def _remember(self, governance: Governance) -> None:
        self._cached = governance
        self._fresh_until = self._clock() + self._cache_seconds
        for level in sorted(DEMOTABLE):
            count = sum(1 for d in governance.demotions.values() if d.from_level == level)
            DEMOTED_BACKENDS.labels(level=str(level)).set(count)


def _parsed(
    records: Mapping[str, Mapping[str, Any]],
    build: Callable[[str, Mapping[str, Any]], _T],
    what: str,
) -> dict[str, _T]:
    found: dict[str, _T] = {}
    for key, record in records.items():
        try:
            found[key] = build(key, record)
        except (KeyError, ValueError):
            log.warning("ignoring a malformed %s record for %s", what, key)
    return found

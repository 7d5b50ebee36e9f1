"""The sweeper leader's level step: demotions refreshed every pass, pull requests hourly.

Reading the verdicts is cheap (the HUD computes them from rollups), so every pass
starts and ends demotions and a degraded backend loses its check runs within one pass;
the pull requests cost GitHub calls and wait `CRCR_LEVELS_SYNC_INTERVAL` between runs,
counted across instances by a claim in the state store.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from crcr.github.errors import GitHubError
from crcr.relay.allowlist.model import Allowlist
from crcr.relay.levels.allowlist_edit import AllowlistEditError
from crcr.relay.levels.book import DemotionBook
from crcr.relay.levels.status import LevelStatusError, LevelStatusSource, parse_level_status
from crcr.relay.levels.sync import LevelSync, SyncReport
from crcr.stores.roles import Idempotency

log = logging.getLogger(__name__)

SYNC_CLAIM = "levels-sync"


@dataclass
class LevelRefresh:
    """Demotions from the latest verdicts, and the periodic pull-request sync."""

    store: Idempotency
    book: DemotionBook
    status: LevelStatusSource
    allowlist: Callable[[], Awaitable[Allowlist]]
    sync: LevelSync | None
    sync_interval: int

    async def __call__(self) -> None:
        """One step of a sweeper pass; a HUD or GitHub outage waits for the next one."""
        try:
            statuses = parse_level_status(await self.status())
        except LevelStatusError as exc:
            log.warning("levels: demotions left as they are: %s", exc)
            return
        allowlist = await self.allowlist()
        await self.book.refresh(statuses, allowlist)
        if self.sync is None or self.sync_interval <= 0:
            return
        if not await self.store.claim_once(SYNC_CLAIM, self.sync_interval):
            return
        try:
            report = await self.sync.run(statuses, allowlist)
        except (GitHubError, AllowlistEditError) as exc:
            log.warning("levels sync failed, tried again in %d s: %s", self.sync_interval, exc)
            return
        _log_report(report)


def _log_report(report: SyncReport) -> None:
    for repo in report.opened:
        log.info("levels sync opened a pull request for %s", repo)
    for repo in report.closed:
        log.info("levels sync closed the pull request for %s", repo)
    for reason in report.skipped:
        log.warning("levels sync skipped %s", reason)
    for repo in report.snoozed:  # a person declined it: nothing is wrong
        log.info("levels sync proposes no demotion of %s: declined", repo)

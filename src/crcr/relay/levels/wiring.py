"""How the levels' parts are put together from the settings (for `crcr.runtime` and the CLI)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import httpx
from anyio import to_thread

from crcr.config.settings import Settings
from crcr.github.client import GitHubClient
from crcr.github.pull_requests import PullRequests
from crcr.hud.db import create_results_engine, migrate
from crcr.hud.levels.status import LevelStatusService
from crcr.relay.allowlist.location import AllowlistLocation, GitHubBlobLocation
from crcr.relay.allowlist.model import Allowlist
from crcr.relay.audit.trail import AuditTrail
from crcr.relay.levels.book import DemotionBook, LevelRecords
from crcr.relay.levels.governance import LevelGovernance
from crcr.relay.levels.refresh import LevelRefresh
from crcr.relay.levels.standings import AllowlistReader, StandingsForHud, allowlist_levels
from crcr.relay.levels.status import LevelStatusSource, http_level_status, level_status_url
from crcr.relay.levels.sync import LevelSync
from crcr.stores.roles import Idempotency


def status_source(
    settings: Settings, http: httpx.AsyncClient, in_process: LevelStatusSource | None
) -> LevelStatusSource:
    """The in-process HUD's `level_status`, or the external HUD's page (`CRCR_HUD_URL`)."""
    if settings.hud_url:
        url = level_status_url(settings.hud_url)
        return http_level_status(http, url, timeout=settings.hud_timeout)
    if in_process is None:
        raise ValueError("without CRCR_HUD_URL the in-process HUD must provide the status")
    return in_process


def level_sync(
    github: GitHubClient, location: AllowlistLocation, book: DemotionBook | None
) -> LevelSync | None:
    """The pull-request sync, when the allowlist lives in a GitHub repository."""
    if not isinstance(location, GitHubBlobLocation):
        return None
    return LevelSync(PullRequests(github, location.repo), location, book)


def level_refresh(
    settings: Settings,
    *,
    store: Idempotency,
    book: DemotionBook,
    status: LevelStatusSource,
    allowlist: Callable[[], Awaitable[Allowlist]],
    sync: LevelSync | None,
) -> LevelRefresh:
    """The sweeper's level step."""
    return LevelRefresh(
        store=store,
        book=book,
        status=status,
        allowlist=allowlist,
        sync=sync,
        sync_interval=settings.levels_sync_interval,
    )


def level_governance(
    settings: Settings, book: DemotionBook, audit: AuditTrail | None, location: AllowlistLocation
) -> LevelGovernance:
    """Declines and overrides; declines are seen only when the allowlist lives on GitHub."""
    return LevelGovernance(
        book,
        snooze_seconds=settings.demotion_snooze,
        audit=None if audit is None else audit.record,
        allowlist_repo=location.repo if isinstance(location, GitHubBlobLocation) else None,
    )


@asynccontextmanager
async def level_status_service(
    settings: Settings, store: LevelRecords, allowlist: AllowlistReader
) -> AsyncIterator[LevelStatusService]:
    """The level status as `crcr serve` composes it, for a command that runs alone.

    The same lookups as the in-process HUD's (`crcr.runtime`): the allowlist's levels
    and the relay's standings, so `crcr levels status` and `crcr doctor` tell the story
    the API and the pages tell (SPEC §10.2 invariant 4).
    """
    engine = create_results_engine(settings.hud_database_url)
    try:
        await to_thread.run_sync(migrate, engine)
        yield LevelStatusService(
            engine,
            settings.level_criteria,
            level_lookup=allowlist_levels(allowlist),
            governance_lookup=StandingsForHud(DemotionBook(store), allowlist),
        )
    finally:
        await to_thread.run_sync(engine.dispose)

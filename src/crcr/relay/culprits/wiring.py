"""Build the culprit finder from a relay's parts (the runtime calls `culprit_finder`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from sqlalchemy import Engine

from crcr.config.settings import Settings
from crcr.github.client import GitHubClient
from crcr.hud.health.memo import HealthMemo
from crcr.hud.health.states import BackendState
from crcr.hud.reads import culprits as reads
from crcr.hud.reads.culprits import JobResult
from crcr.relay.alerts.sinks import AlertSinks
from crcr.relay.allowlist.model import Allowlist
from crcr.relay.culprits.announce import Announcer, AnnounceStore
from crcr.relay.culprits.finder import CulpritFinder, FinderStore
from crcr.relay.webhook.fanout import FanOut


class CulpritStore(FinderStore, AnnounceStore, Protocol):
    """The state store's roles the finder and its announcer use together."""


class HudResults:
    """The finder's reads of the in-process HUD, off the event loop."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    async def push_results(self, repo: str, limit: int) -> list[JobResult]:
        """`hud.reads.culprits.push_results` in a thread."""
        return await asyncio.to_thread(reads.push_results, self._engine, repo, limit)

    async def dispatch_jobs(self, repo: str, delivery_ids: Sequence[str]) -> list[JobResult]:
        """`hud.reads.culprits.dispatch_jobs` in a thread."""
        return await asyncio.to_thread(reads.dispatch_jobs, self._engine, repo, delivery_ids)


def failing_backends(memo: HealthMemo) -> Callable[[], Awaitable[list[str]]]:
    """The backends whose SPEC §13 state is `failing` now."""

    async def failing() -> list[str]:
        report = await memo.fresh()
        return [b.repo for b in report.backends if b.state is BackendState.FAILING]

    return failing


def culprit_finder(
    settings: Settings,
    *,
    store: CulpritStore,
    engine: Engine,
    memo: HealthMemo,
    fanout: FanOut,
    github: GitHubClient,
    allowlist: Callable[[], Awaitable[Allowlist]],
    instance: str,
    clock: Callable[[], float],
) -> CulpritFinder:
    """The finder of one relay instance, announcing to the configured alert sinks."""
    announcer = Announcer(
        store=store,
        sinks=AlertSinks.from_settings(settings),
        github=github,
        allowlist=allowlist,
        upstream_repo=settings.upstream_repo,
        link_base=settings.hud_public_url,
        comment=settings.culprit_comment,
        keep_days=settings.audit_days,
        keep_entries=settings.audit_max_per_repo,
    )
    return CulpritFinder(
        store=store,
        results=HudResults(engine),
        fanout=fanout,
        github=github,
        announcer=announcer,
        failing=failing_backends(memo),
        upstream_repo=settings.upstream_repo,
        parallel=settings.bisect_parallel,
        instance=instance,
        clock=clock,
        step_timeout=settings.zombie_timeout,
    )

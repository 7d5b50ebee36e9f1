"""The HUD's read facade: the one entry point the pages and the JSON API read through.

The JSON API (`crcr.hud.api`) and the HTML pages (`crcr.hud.web`) call `HudQueries` and
render the frozen result types that each reader in `crcr.hud.reads` defines beside its
SQL; neither touches SQL. Obtain an instance from the composed HUD:
`crcr.hud.component.Hud.queries`.

Windows are whole UTC calendar days: `window_days=7` means today and the six days before
it, because the rollups that keep the summary views cheap are kept per day.
"""

from __future__ import annotations

from datetime import datetime

from anyio import to_thread
from sqlalchemy import Engine

from crcr.hud.baseline.reader import read_baseline_verdicts
from crcr.hud.baseline.verdicts import BaselineKey, Verdict
from crcr.hud.reads.backend import BackendPage, read_backend_page
from crcr.hud.reads.find import FindResult, read_find
from crcr.hud.reads.freshness import Freshness, read_freshness
from crcr.hud.reads.latency import LatencyPoint, read_latency
from crcr.hud.reads.periodic import PeriodicRow, read_periodic
from crcr.hud.reads.pr import PrView, read_pr
from crcr.hud.reads.shared import SharedReads
from crcr.hud.reads.summary import Summary, read_summary

WINDOW_CHOICES = (1, 7, 14, 30)
MAX_WINDOW_DAYS = 90


class HudQueries:
    """Read the results store; every method runs its SQL in a worker thread.

    `now` exists for tests and benchmarks; it defaults to the current UTC time.
    """

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._heavy = SharedReads()

    async def summary(
        self, window_days: int, event_type: str | None = None, *, now: datetime | None = None
    ) -> Summary:
        """Every backend's health over the window, read from the daily rollups."""
        return await to_thread.run_sync(read_summary, self._engine, window_days, event_type, now)

    async def backend(
        self,
        repo: str,
        window_days: int,
        page: int = 1,
        per_page: int = 25,
        *,
        event_type: str | None = None,
        now: datetime | None = None,
    ) -> BackendPage | None:
        """A backend's figures and its recent commits' job matrix; None if unknown."""
        return await self._heavy.bounded(
            read_backend_page,
            self._engine,
            repo,
            window_days,
            page,
            per_page,
            event_type,
            now,
        )

    async def pr(self, number: int) -> PrView:
        """Every backend's jobs for an upstream PR (empty when none reported)."""
        return await to_thread.run_sync(read_pr, self._engine, number)

    async def baseline_verdicts(self, pr_number: int, head_sha: str) -> dict[BaselineKey, Verdict]:
        """The baseline verdict of each failed job of a PR head, by (repo, workflow, job)."""
        return await to_thread.run_sync(read_baseline_verdicts, self._engine, pr_number, head_sha)

    async def latency_percentiles(
        self, window_days: int, *, now: datetime | None = None
    ) -> tuple[LatencyPoint, ...]:
        """Per backend per day p50/p90/p99 of queue and execution time (shared, kept)."""
        if now is not None:
            return await self._heavy.bounded(read_latency, self._engine, window_days, now)
        version = (await self.freshness()).version
        key = self._heavy.key(("latency", window_days), version)
        return await self._heavy.shared(key, read_latency, self._engine, window_days, None)

    async def periodic(
        self, window_days: int, *, now: datetime | None = None
    ) -> tuple[PeriodicRow, ...]:
        """Nightly/periodic view: latest tested upstream SHA and pass rate per backend."""
        return await self._heavy.bounded(read_periodic, self._engine, window_days, now)

    async def find(self, query: str) -> FindResult:
        """The PRs, commits and backends a find-box query names."""
        return await to_thread.run_sync(read_find, self._engine, query)

    async def freshness(self) -> Freshness:
        """The store's change marker, which the live pages poll."""
        return await to_thread.run_sync(read_freshness, self._engine)

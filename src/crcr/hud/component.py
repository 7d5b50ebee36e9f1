"""The composed HUD: engine, ingestor, queries and retention, and how apps mount it.

`crcr serve` opens it beside the relay (`open_hud` + `mount_hud`); `crcr hud serve`
runs it alone (`create_hud_app`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from anyio import to_thread
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import SecretStr
from sqlalchemy import Engine, text

from crcr import __version__
from crcr.config.level_criteria import LevelCriteria
from crcr.config.settings import Settings
from crcr.hud.api import hud_api_router
from crcr.hud.db import create_results_engine, migrate
from crcr.hud.levels.providers import DemotionLookup, GovernanceLookup, LevelLookup
from crcr.hud.levels.status import LevelStatusService
from crcr.hud.queries import HudQueries
from crcr.hud.write.ingest import HudIngestor
from crcr.hud.write.writer import purge_older_than
from crcr.web.access_log import AccessLog
from crcr.web.api_docs import mount_api_docs
from crcr.web.error_bodies import install_error_handlers
from crcr.web.http_wire import add_wire_middleware
from crcr.web.openapi_document import complete_openapi
from crcr.web.readiness import RESPONSES, readiness
from crcr.web.security_headers import SecurityHeaders

logger = logging.getLogger(__name__)

RETENTION_INTERVAL_SECONDS = 6 * 3600


@dataclass
class Hud:
    """The HUD's live parts; `close()` releases them.

    `levels` judges the backends (SPEC §10.1); a relay beside the HUD gives it the
    allowlist's levels and each backend's standing (`levels.level_lookup`,
    `levels.governance_lookup`).
    """

    engine: Engine
    ingestor: HudIngestor
    queries: HudQueries
    token: SecretStr | None
    retention_days: int
    level_criteria: LevelCriteria = field(default_factory=LevelCriteria)
    levels: LevelStatusService = field(init=False)
    _retention_task: asyncio.Task[None] | None = field(default=None, repr=False)

    async def baseline_verdicts(
        self, pr_number: int, head_sha: str
    ) -> dict[tuple[str, str, str], str]:
        """Each failed job's baseline verdict (SPEC §11), keyed by (repo, workflow, job).

        For the relay's check-run summaries when the HUD runs in process; jobs that did
        not fail are absent.
        """
        return dict(await self.queries.baseline_verdicts(pr_number, head_sha))

    def __post_init__(self) -> None:
        self.levels = LevelStatusService(self.engine, self.level_criteria)

    async def level_status(self, now: datetime | None = None) -> dict[str, Any]:
        """Every backend's level status as SPEC §10.1's JSON (for the in-process relay)."""
        return await self.levels.status(now)

    async def ping(self) -> None:
        """Raise if the results store does not answer a trivial query (for `/readyz`)."""
        await to_thread.run_sync(_select_one, self.engine)

    async def purge_expired(self, now: datetime | None = None) -> int:
        """Delete rows and rollups older than the retention; returns rows deleted."""
        today = (now or datetime.now(UTC)).date()
        cutoff = today - timedelta(days=self.retention_days - 1)
        return await to_thread.run_sync(purge_older_than, self.engine, cutoff)

    async def _retention_loop(self) -> None:
        while True:
            try:
                deleted = await self.purge_expired()
                if deleted:
                    logger.info("HUD retention: deleted %d job rows", deleted)
            except Exception:
                logger.exception("HUD retention purge failed; retrying later")
            await asyncio.sleep(RETENTION_INTERVAL_SECONDS)

    async def close(self) -> None:
        """Stop the retention task and dispose of the connection pool."""
        if self._retention_task is not None:
            self._retention_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._retention_task
        await self.ingestor.close()
        await to_thread.run_sync(self.engine.dispose)


def _select_one(engine: Engine) -> None:
    with engine.connect() as connection:
        connection.execute(text("SELECT 1"))


async def open_hud(
    settings: Settings,
    *,
    retention: bool = True,
    level_lookup: LevelLookup | None = None,
    demotion_lookup: DemotionLookup | None = None,
    governance_lookup: GovernanceLookup | None = None,
) -> Hud:
    """Connect to the results store, apply migrations, and start the retention task.

    Without `level_lookup` the level status takes each backend's latest reported level.
    """
    engine = create_results_engine(settings.hud_database_url, manual_checkpoints=True)
    await to_thread.run_sync(migrate, engine)
    hud = Hud(
        engine=engine,
        # Held: `Hud.close` closes the ingestor, which gives the connection back.
        ingestor=HudIngestor(engine, allow_http=settings.allows_plain_http, hold_connection=True),
        queries=HudQueries(engine),
        token=settings.hud_token,
        retention_days=settings.hud_retention_days,
        level_criteria=settings.level_criteria,
    )
    hud.levels.level_lookup = level_lookup
    hud.levels.demotion_lookup = demotion_lookup
    hud.levels.governance_lookup = governance_lookup
    if retention:
        hud._retention_task = asyncio.create_task(hud._retention_loop(), name="hud-retention")
    return hud


def hud_from_app_state(request: Request) -> Hud:
    """The HUD an app's lifespan stored in `app.state.hud`."""
    hud: Hud = request.app.state.hud
    return hud


def mount_hud(app: FastAPI, get_hud: Callable[[Request], Hud] = hud_from_app_state) -> None:
    """Add the `/api/crcr/*` routes to `app`; by default they use `app.state.hud`."""
    app.include_router(hud_api_router(get_hud))


def create_hud_app(settings: Settings) -> FastAPI:
    """The HUD alone, as an ASGI app (`crcr hud serve`)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.hud = await open_hud(settings)
        try:
            yield
        finally:
            await app.state.hud.close()

    app = FastAPI(title="crcr HUD", version=__version__, lifespan=lifespan, **settings.docs_routes)
    app.add_middleware(SecurityHeaders)
    add_wire_middleware(app)
    app.add_middleware(AccessLog)
    install_error_handlers(app)
    if settings.public_docs:
        mount_api_docs(app)
    complete_openapi(app)
    app.state.settings = settings

    @app.get("/healthz", tags=["ops"])
    async def healthz() -> dict[str, str]:
        """Liveness: the process answers."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["ops"], responses=RESPONSES)
    async def readyz() -> JSONResponse:
        """Readiness: the results store answers."""
        return await readiness({"results store": app.state.hud.ping})

    mount_hud(app)
    from crcr.hud.web.routes import pages_router

    app.include_router(
        pages_router(
            lambda: app.state.hud.queries,
            levels=lambda: app.state.hud.levels,
            upstream_repo=settings.upstream_repo,
        )
    )
    return app

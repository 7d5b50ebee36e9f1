"""The ASGI app factory shared by `crcr serve`, the demo and the tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from crcr import __version__
from crcr.relay.callback import callback_router
from crcr.relay.webhook import webhook_router
from crcr.runtime import Runtime, open_runtime
from crcr.settings import Settings, load_settings
from crcr.stores.state import StateStoreUnavailable

OpenRuntime = Callable[[Settings], Awaitable[Runtime]]


def create_app(
    settings: Settings,
    *,
    runtime: OpenRuntime = open_runtime,
    background: bool = True,
) -> FastAPI:
    """Build the relay + HUD app.

    `runtime` opens the live parts when the app starts; a test or the demo passes its
    own opener to bind them to the sandbox. `background` runs the sweeper.
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        opened = await runtime(settings)
        app.state.runtime = opened
        app.state.hud = opened.hud
        if background:
            opened.start_background()
        try:
            yield
        finally:
            await opened.close()

    app = FastAPI(title="crcr", version=__version__, lifespan=lifespan)
    app.state.settings = settings

    def live() -> Runtime:
        opened: Runtime = app.state.runtime
        return opened

    app.include_router(webhook_router(lambda: live().webhook))
    app.include_router(callback_router(lambda: live().callback))
    _mount_hud(app, settings)

    @app.get("/healthz", tags=["ops"])
    async def healthz() -> dict[str, str]:
        """Liveness: the process answers."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["ops"])
    async def readyz(request: Request) -> JSONResponse:
        """Readiness: the state store answers."""
        try:
            await request.app.state.runtime.store.ping()
        except StateStoreUnavailable as exc:
            return JSONResponse({"status": "unavailable", "reason": str(exc)}, status_code=503)
        return JSONResponse({"status": "ok"})

    @app.get("/metrics", tags=["ops"], include_in_schema=False)
    async def metrics() -> Response:
        """Prometheus exposition of this process's metrics."""
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    return app


def _mount_hud(app: FastAPI, settings: Settings) -> None:
    """The in-process HUD's API and pages, unless results go to a remote HUD."""
    if settings.hud_url:
        return
    from crcr.hud.component import mount_hud
    from crcr.hud.web.routes import pages_router

    mount_hud(app)
    app.include_router(
        pages_router(lambda: app.state.hud.queries, upstream_repo=settings.upstream_repo)
    )


def create_app_from_environment() -> FastAPI:
    """Factory for uvicorn (`crcr serve`): settings from the environment, JSON logs."""
    from crcr.gc_tuning import tune_for_serving
    from crcr.log_format import configure_json_logging

    configure_json_logging()
    app = create_app(load_settings())
    tune_for_serving()
    return app

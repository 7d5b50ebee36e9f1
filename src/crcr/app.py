"""The ASGI app factory shared by `crcr serve`, the demo and the tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from crcr import __version__
from crcr.settings import Settings, load_settings
from crcr.stores.state import StateStore, StateStoreUnavailable


def create_app(settings: Settings, *, state: StateStore | None = None) -> FastAPI:
    """Build the relay + HUD app.

    `state` lets a test (or the demo) pass a store it already opened; otherwise the
    app opens the one the settings name when it starts and closes it when it stops.
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        from crcr.stores.factory import open_state_store

        owned = state is None
        app.state.store = state if state is not None else await open_state_store(settings)
        try:
            yield
        finally:
            if owned:
                await app.state.store.close()

    app = FastAPI(title="crcr", version=__version__, lifespan=lifespan)
    app.state.settings = settings

    @app.get("/healthz", tags=["ops"])
    async def healthz() -> dict[str, str]:
        """Liveness: the process answers."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["ops"])
    async def readyz() -> JSONResponse:
        """Readiness: the state store answers."""
        try:
            await app.state.store.ping()
        except StateStoreUnavailable as exc:
            return JSONResponse({"status": "unavailable", "reason": str(exc)}, status_code=503)
        return JSONResponse({"status": "ok"})

    return app


def create_app_from_environment() -> FastAPI:
    """Factory for uvicorn (`crcr serve`): settings from the environment."""
    return create_app(load_settings())

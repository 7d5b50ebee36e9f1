"""The ASGI app factory shared by `crcr serve`, the demo and the tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.types import ASGIApp, Receive, Scope, Send

from crcr import __version__
from crcr.config.settings import Settings, SettingsError, load_settings
from crcr.ops.metrics_exposition import exposition
from crcr.relay.alerts.api import alerts_router
from crcr.relay.allowlist.source import AllowlistUnavailable
from crcr.relay.callback.endpoint import CALLBACK_PATHS, CallbackEndpoint, callback_router
from crcr.relay.culprits.api import culprits_router
from crcr.relay.culprits.report import culprit_lookup
from crcr.relay.health.api import health_router
from crcr.relay.health.badge import badge_router
from crcr.relay.openapi_operations import relay_operations
from crcr.relay.webhook.endpoint import webhook_router
from crcr.runtime import Runtime, open_runtime
from crcr.web.access_log import AccessLog
from crcr.web.api_docs import mount_api_docs
from crcr.web.error_bodies import install_error_handlers
from crcr.web.http_wire import add_wire_middleware
from crcr.web.openapi_document import complete_openapi
from crcr.web.readiness import RESPONSES, NotReady, readiness
from crcr.web.security_headers import SecurityHeaders
from crcr.web.web_urls import github_web_url

OpenRuntime = Callable[[Settings], Awaitable[Runtime]]


class RelayApp(FastAPI):
    """FastAPI, plus express routes: POST endpoints served ahead of the middleware stack.

    The callback endpoint is the hot path and handles its own errors, body cap and
    answers; FastAPI's seven middleware layers and the route table in front of it cost
    ~5 % of a callback's CPU for nothing it uses. The routes stay declared in the
    router too, so other methods get their usual 405.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.express_routes: dict[str, ASGIApp] = {}
        self._logged = AccessLog(self._route)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._logged(scope, receive, send)

    async def _route(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            express = self.express_routes.get(scope["path"])
            if express is not None and not scope.get("root_path"):
                await express(scope, receive, send)
                return
        await super().__call__(scope, receive, send)


def create_app(
    settings: Settings,
    *,
    runtime: OpenRuntime = open_runtime,
    background: bool = True,
    started: Callable[[], None] | None = None,
    github_web: str | None = None,
) -> FastAPI:
    """Build the relay + HUD app.

    `runtime` opens the live parts when the app starts; a test or the demo passes its
    own opener to bind them to the sandbox. `background` runs the sweeper. `started` is
    called once everything is open, before the first request. `github_web` is where the
    dashboard links pull requests (default: the web side of `CRCR_GITHUB_API_URL`; the
    demo passes the sandbox's PR pages, as its pull requests exist nowhere else).
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        opened = await runtime(settings)
        app.state.runtime = opened
        app.state.hud = opened.hud
        if background:
            opened.start_background()
        if started is not None:
            started()
        try:
            yield
        finally:
            await opened.close()

    app = RelayApp(title="crcr", version=__version__, lifespan=lifespan, **settings.docs_routes)
    app.add_middleware(SecurityHeaders)
    add_wire_middleware(app)
    install_error_handlers(app)
    if settings.public_docs:
        mount_api_docs(app)
    complete_openapi(app, relay_operations())
    app.state.settings = settings

    def live() -> Runtime:
        opened: Runtime = app.state.runtime
        return opened

    app.include_router(webhook_router(lambda: live().webhook))
    callbacks = CallbackEndpoint(lambda: live().callback)
    app.include_router(callback_router(callbacks))
    app.express_routes.update(dict.fromkeys(CALLBACK_PATHS, callbacks))
    _mount_hud(app, settings, github_web or github_web_url(settings.github_api_url))
    if not settings.hud_url:
        app.include_router(health_router(lambda: live().health_memo))
        app.include_router(badge_router(lambda: live().health, lambda: live().allowlist()))
    app.include_router(alerts_router(lambda: live().store))
    app.include_router(culprits_router(lambda: live().store))

    @app.get("/healthz", tags=["ops"])
    async def healthz() -> dict[str, str]:
        """Liveness: the process answers."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["ops"], responses=RESPONSES)
    async def readyz(request: Request) -> JSONResponse:
        """Readiness: the state store and the in-process HUD's results store answer.

        A remote HUD (`CRCR_HUD_URL`) is not asked: while it is down callbacks are
        queued and answered 202, so this instance is still worth sending traffic to.
        """
        runtime = request.app.state.runtime
        checks = {"state store": runtime.store.ping}
        if runtime.hud is not None:
            checks["results store"] = runtime.hud.ping
        if getattr(runtime, "allowlist", None) is not None:
            checks["allowlist"] = _allowlist_ping(runtime.allowlist)
        return await readiness(checks)

    @app.get("/metrics", tags=["ops"], include_in_schema=False)
    async def metrics() -> Response:
        """Prometheus exposition of this process's metrics (all workers' under `--workers`)."""
        return Response(exposition(), media_type=CONTENT_TYPE_LATEST)

    return app


def _allowlist_ping(allowlist: Callable[[], Awaitable[object]]) -> Callable[[], Awaitable[None]]:
    """Readiness of the allowlist: not ready while none is in force (SPEC §3)."""

    async def ping() -> None:
        try:
            await allowlist()
        except AllowlistUnavailable as exc:
            raise NotReady(str(exc)) from None

    return ping


def _mount_hud(app: FastAPI, settings: Settings, github_web: str) -> None:
    """The in-process HUD's API and pages, unless results go to a remote HUD."""
    if settings.hud_url:
        return
    from crcr.hud.component import mount_hud
    from crcr.hud.web.routes import pages_router

    mount_hud(app)
    app.include_router(
        pages_router(
            lambda: app.state.hud.queries,
            levels=lambda: app.state.hud.levels,
            health=lambda: app.state.runtime.health_memo,
            culprits=culprit_lookup(lambda: app.state.runtime.store),
            budgets=lambda: getattr(app.state.runtime.budget_board, "shown", None),
            upstream_repo=settings.upstream_repo,
            github_web=github_web,
        )
    )


def create_app_from_environment() -> FastAPI:
    """Factory for uvicorn (`crcr serve`, each worker): settings and logs from the environment."""
    from crcr.config.cli_settings import check_drivers
    from crcr.config.logging_setup import configure_logging
    from crcr.ops.gc_tuning import freeze_what_exists, tune_for_serving

    settings = load_settings()
    configure_logging(settings.log_level, settings.log_format, access_log=settings.access_log)
    check_drivers(settings)
    missing = settings.missing_for_serving()
    if missing:
        # As `crcr serve` refuses: uvicorn may import this factory without the CLI.
        raise SettingsError(f"missing required settings: {', '.join(missing)}")
    app = create_app(settings, started=freeze_what_exists)
    tune_for_serving()
    return app

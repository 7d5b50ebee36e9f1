"""The app's express routes: POSTs served ahead of FastAPI's middleware, the rest as usual."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
from sqlalchemy import create_engine
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from crcr.app import RelayApp, create_app
from crcr.config.settings import Settings, load_settings
from crcr.hud.component import Hud
from crcr.stores.state import StateStoreUnavailable


class Express:
    """A bare ASGI endpoint (a class, so the router does not wrap it as a request handler)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await PlainTextResponse("express")(scope, receive, send)


express = Express()


def app_with_express_route() -> RelayApp:
    app = RelayApp()
    app.router.routes.append(Route("/hot", express, methods=["POST"]))
    app.express_routes["/hot"] = express

    @app.middleware("http")
    async def tag(request, call_next):  # type: ignore[no-untyped-def]
        response = await call_next(request)
        response.headers["x-through-middleware"] = "yes"
        return response

    return app


async def post_and_get(path: str, **transport: object) -> tuple[httpx.Response, httpx.Response]:
    asgi = httpx.ASGITransport(app=app_with_express_route(), **transport)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=asgi, base_url="http://relay") as client:
        return await client.post(path), await client.get(path)


async def test_a_post_to_an_express_route_skips_the_middleware() -> None:
    post, _ = await post_and_get("/hot")

    assert post.status_code == 200
    assert post.text == "express"
    assert "x-through-middleware" not in post.headers


async def test_other_methods_reach_the_router_and_get_its_405() -> None:
    _, get = await post_and_get("/hot")

    assert get.status_code == 405
    assert get.headers["x-through-middleware"] == "yes"


async def test_other_paths_go_through_fastapi() -> None:
    post, _ = await post_and_get("/elsewhere")

    assert post.status_code == 404
    assert post.headers["x-through-middleware"] == "yes"


async def test_behind_a_path_prefix_the_router_decides() -> None:
    post, _ = await post_and_get("/hot", root_path="/relay")

    assert post.headers["x-through-middleware"] == "yes"


async def readyz(tmp_path: Path, store: object, hud: object = None) -> httpx.Response:
    """`/readyz` of a relay app whose runtime has this store and in-process HUD."""

    async def runtime(settings: Settings) -> Any:
        async def close() -> None:
            return None

        return SimpleNamespace(store=store, hud=hud, close=close)

    app = create_app(load_settings(data_dir=tmp_path), runtime=runtime, background=False)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://relay") as client:
            return await client.get("/readyz")


async def test_readiness_names_no_host_port_or_path_of_the_store(tmp_path: Path) -> None:
    class DownStore:
        async def ping(self) -> None:
            raise StateStoreUnavailable("Redis at 10.0.0.5:6379 (redis://cache-internal): refused")

    response = await readyz(tmp_path, DownStore())

    assert response.status_code == 503
    assert response.json() == {"detail": "not ready: state store unavailable"}


async def test_readiness_asks_the_results_store_and_names_none_of_its_details(
    tmp_path: Path,
) -> None:
    # A real SQLAlchemy engine on a file that cannot be opened: the driver's own error.
    unopenable = tmp_path / "no-such-dir" / "hud.db"
    engine = create_engine(f"sqlite:///{unopenable}")

    class UpStore:
        async def ping(self) -> None:
            return None

    hud = SimpleNamespace(ping=lambda: Hud.ping(SimpleNamespace(engine=engine)))  # type: ignore[arg-type]
    try:
        response = await readyz(tmp_path, UpStore(), hud)
    finally:
        engine.dispose()

    assert response.status_code == 503
    assert response.json() == {"detail": "not ready: results store unavailable"}
    assert "no-such-dir" not in response.text

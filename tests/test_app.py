"""The app's express routes: POSTs served ahead of FastAPI's middleware, the rest as usual."""

from __future__ import annotations

import httpx
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from crcr.app import RelayApp


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

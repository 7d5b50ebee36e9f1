"""The GitHub client's own wire (aiohttp behind an httpx transport), over real sockets."""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from crcr.github.aiohttp_transport import AiohttpTransport
from crcr.github.client import GitHubClient
from crcr.sandbox.github_server import create_sandbox_app
from crcr.sandbox.github_state import SandboxGitHub


@pytest.fixture
def served() -> Iterator[Any]:
    """Serve an ASGI app on a loopback socket from a thread; yields a function taking it."""
    servers: list[tuple[uvicorn.Server, threading.Thread, socket.socket]] = []

    def serve(app: Any) -> str:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)  # connections wait in the kernel until uvicorn accepts them
        config = uvicorn.Config(app, log_config=None, log_level="warning", lifespan="off")
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        servers.append((server, thread, sock))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"

    yield serve
    for server, thread, sock in servers:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


async def test_a_fan_out_reaches_the_sandbox_over_real_connections(served: Any) -> None:
    github = SandboxGitHub()
    repos = [f"org{i % 3}/backend{i}" for i in range(30)]
    github.install_app(*repos)
    url = served(create_sandbox_app(github))
    async with GitHubClient(url, github.app.app_id, github.app.private_key_pem, None) as client:
        await asyncio.gather(
            *(client.dispatch(repo, "ci", {"n": i}) for i, repo in enumerate(repos))
        )
    sent = {d.repo: d.client_payload for d in github.dispatches()}
    assert sent == {repo: {"n": i} for i, repo in enumerate(repos)}
    calls = github.calls(method="POST", path="/repos/*/dispatches")
    assert {call.headers["content-type"] for call in calls} == {"application/json"}
    assert {call.headers["x-github-api-version"] for call in calls} == {"2022-11-28"}


async def test_headers_go_out_and_a_gzipped_answer_comes_back_decoded(served: Any) -> None:
    seen: dict[str, str] = {}

    async def echo(request: Request) -> Response:
        seen.update(request.headers)
        body = json.dumps({"got": (await request.body()).decode()}).encode()
        return Response(
            gzip.compress(body),
            status_code=201,
            headers={"content-encoding": "gzip", "content-type": "application/json"},
        )

    url = served(Starlette(routes=[Route("/echo", echo, methods=["POST"])]))
    transport = AiohttpTransport(connections=4, keepalive_seconds=5)
    try:
        response = await transport.handle_async_request(
            httpx.Request("POST", f"{url}/echo", headers={"authorization": "Bearer x"}, json=[1])
        )
        await response.aread()
    finally:
        await transport.aclose()
    assert response.status_code == 201
    assert response.json() == {"got": "[1]"}
    assert seen["authorization"] == "Bearer x"
    assert seen["content-type"] == "application/json"


async def test_a_refused_connection_is_httpx_connect_error() -> None:
    with socket.socket() as sock:  # a port nobody listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    transport = AiohttpTransport(connections=1, keepalive_seconds=5)
    try:
        with pytest.raises(httpx.ConnectError):
            await transport.handle_async_request(httpx.Request("GET", f"http://127.0.0.1:{port}/"))
    finally:
        await transport.aclose()


async def test_a_silent_server_is_httpx_read_timeout(served: Any) -> None:
    async def silent(request: Request) -> Response:
        await asyncio.sleep(1.5)  # well past the client's 0.2 s; short enough to shut down
        return Response()

    url = served(Starlette(routes=[Route("/", silent)]))
    transport = AiohttpTransport(connections=1, keepalive_seconds=5)
    request = httpx.Request("GET", f"{url}/", extensions={"timeout": httpx.Timeout(0.2).as_dict()})
    try:
        with pytest.raises(httpx.ReadTimeout):
            await transport.handle_async_request(request)
    finally:
        await transport.aclose()

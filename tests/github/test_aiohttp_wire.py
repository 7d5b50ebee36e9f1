"""The GitHub client's own wire (aiohttp, no httpx models), over real sockets."""

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

from crcr.github.aiohttp_wire import AiohttpWire
from crcr.github.client import GitHubClient
from crcr.github.errors import GitHubUnprocessable
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


async def test_on_the_real_wire_throttling_is_waited_out_and_a_refusal_is_typed(
    served: Any,
) -> None:
    # The retry loop is GitHubHttp's one loop whichever wire it sends on: here aiohttp's,
    # whose answers are never httpx's models until a failure's message is read.
    github = SandboxGitHub()
    github.install_app("org/throttled", "org/refused")
    github.inject_fault("/repos/org/throttled/dispatches", status=403, retry_after=1, times=1)
    github.inject_fault(
        "/repos/org/refused/dispatches", status=422, body={"message": "Bad event_type"}
    )
    url = served(create_sandbox_app(github))
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    client = GitHubClient(url, github.app.app_id, github.app.private_key_pem, None, sleep=sleep)
    async with client:
        await client.dispatch("org/throttled", "ci", {})
        with pytest.raises(GitHubUnprocessable) as refused:
            await client.dispatch("org/refused", "ci", {}, max_retries=3)

    assert [c.status for c in github.calls("POST", "/repos/org/throttled/dispatches")] == [
        403,
        204,
    ]
    assert waits == [1.0]  # exactly GitHub's Retry-After, once
    assert refused.value.call == "POST /repos/org/refused/dispatches"
    assert refused.value.message == "Bad event_type"
    assert len(github.calls("POST", "/repos/org/refused/dispatches")) == 1  # final, not retried


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
    wire = AiohttpWire(connections=4, keepalive_seconds=5, deadline=5)
    try:
        answer = await wire.send(
            "POST",
            f"{url}/echo",
            {"authorization": "Bearer x", "content-type": "application/json"},
            b"[1]",
        )
    finally:
        await wire.aclose()
    assert answer.status_code == 201
    assert answer.headers["Content-Encoding"] == "gzip"  # case-insensitive, as sent
    assert answer.response("POST", f"{url}/echo").json() == {"got": "[1]"}
    assert seen["authorization"] == "Bearer x"
    assert seen["content-type"] == "application/json"


async def test_a_bodiless_post_goes_out_without_a_content_type(served: Any) -> None:
    seen: dict[str, str] = {}

    async def record(request: Request) -> Response:
        seen.update(request.headers)
        return Response(status_code=201)

    url = served(Starlette(routes=[Route("/rerun", record, methods=["POST"])]))
    wire = AiohttpWire(connections=1, keepalive_seconds=5, deadline=5)
    try:
        answer = await wire.send("POST", f"{url}/rerun", {"user-agent": "crcr/test"}, None)
    finally:
        await wire.aclose()
    assert answer.status_code == 201
    assert "content-type" not in seen
    assert (seen["user-agent"], seen["content-length"]) == ("crcr/test", "0")


async def test_a_refused_connection_is_httpx_connect_error() -> None:
    with socket.socket() as sock:  # a port nobody listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    wire = AiohttpWire(connections=1, keepalive_seconds=5, deadline=5)
    try:
        with pytest.raises(httpx.ConnectError):
            await wire.send("GET", f"http://127.0.0.1:{port}/", {}, None)
    finally:
        await wire.aclose()


async def test_a_silent_server_is_httpx_read_timeout(served: Any) -> None:
    async def silent(request: Request) -> Response:
        await asyncio.sleep(1.5)  # well past the wire's 0.2 s; short enough to shut down
        return Response()

    url = served(Starlette(routes=[Route("/", silent)]))
    wire = AiohttpWire(connections=1, keepalive_seconds=5, deadline=0.2)
    try:
        with pytest.raises(httpx.ReadTimeout):
            await wire.send("GET", f"{url}/", {}, None)
    finally:
        await wire.aclose()

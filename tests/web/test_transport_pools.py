"""The forward's own connections: httpx transports used without a client, in small pools."""

from __future__ import annotations

import socket
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from crcr.relay.results.forwarder import HttpHudTransport, HudUnreachable
from crcr.web.transport_pools import TransportPools

URL = "http://hud.test/api/crcr/results"


class Hud:
    """A HUD answering `status`, recording what each request carried."""

    def __init__(self, status: int) -> None:
        self.status = status
        self.seen: list[dict[str, Any]] = []
        self.app = Starlette(routes=[Route("/api/crcr/results", self.ingest, methods=["POST"])])

    async def ingest(self, request: Request) -> JSONResponse:
        self.seen.append({"headers": dict(request.headers), "body": await request.json()})
        return JSONResponse({"error": f"answered {self.status}"}, self.status)


def pools_to(hud: Hud, count: int = 2) -> TransportPools:
    return TransportPools([httpx.ASGITransport(app=hud.app) for _ in range(count)])


async def test_a_post_carries_the_body_and_headers_and_returns_status_and_text() -> None:
    hud = Hud(201)
    pools = pools_to(hud)

    status, text = await pools.post(
        URL, b'{"n":1}', {"content-type": "application/json", "x-t": "v"}, phase_seconds=5
    )

    assert (status, text) == (201, '{"error":"answered 201"}')
    assert hud.seen[0]["body"] == {"n": 1}
    assert hud.seen[0]["headers"]["x-t"] == "v"


async def test_the_hud_transport_sends_through_the_pools_in_turn_with_its_token() -> None:
    hud = Hud(200)
    pools = pools_to(hud, count=2)
    transport = HttpHudTransport(URL, "hud-secret", pools, retry_delay=0.01)

    answers = [await transport.send({"n": n}, within=5) for n in range(4)]

    assert [a.status_code for a in answers] == [200] * 4
    assert [seen["body"]["n"] for seen in hud.seen] == [0, 1, 2, 3]
    assert {seen["headers"]["x-hud-internal-bot"] for seen in hud.seen} == {"hud-secret"}


async def test_a_hud_5xx_through_the_pools_is_unreachable_after_its_retry() -> None:
    hud = Hud(503)
    transport = HttpHudTransport(URL, None, pools_to(hud), retry_delay=0.01)

    with pytest.raises(HudUnreachable, match="503"):
        await transport.send({"n": 1}, within=5)
    assert len(hud.seen) == 2  # the first try and one retry


async def test_a_closed_port_is_a_transport_error_on_real_connections() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    pools = TransportPools.keep_alive(4)
    transport = HttpHudTransport(
        f"http://127.0.0.1:{port}/api/crcr/results", None, pools, retry_delay=0.01
    )
    try:
        with pytest.raises(HudUnreachable, match="ConnectError"):
            await transport.send({"n": 1}, within=2)
    finally:
        await pools.aclose()


def test_pools_need_a_transport() -> None:
    with pytest.raises(ValueError, match="at least one transport"):
        TransportPools([])

"""The HUD forward's own connections: aiohttp's client to one origin, over real sockets.

A HUD served by uvicorn in this loop (plain HTTP, or HTTPS with a certificate made for
the test and trusted through `SSL_CERT_FILE`, as an operator trusts a private CA).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from crcr.config.settings import Settings
from crcr.relay.results.forwarder import (
    HUD_QUEUE,
    Delivery,
    HttpHudTransport,
    HudUnreachable,
    forwarder_from_settings,
)
from crcr.stores.sqlite.state import SqliteStateStore
from crcr.web.aiohttp_origin import AiohttpOrigin

PATH = "/api/crcr/results"


class Hud:
    """A HUD answering `status` (after `release` is set, when `hold` is), recording each request."""

    def __init__(self, status: int = 200, *, hold: bool = False) -> None:
        self.status = status
        self.release = asyncio.Event()
        if not hold:
            self.release.set()
        self.seen: list[dict[str, Any]] = []
        self.app = Starlette(routes=[Route(PATH, self.ingest, methods=["POST"])])

    async def ingest(self, request: Request) -> Response:
        body = await request.body()
        assert request.client is not None
        self.seen.append({"headers": dict(request.headers), "body": body, "peer": request.client})
        await self.release.wait()
        return JSONResponse({"error": f"answered {self.status}"}, self.status)


@contextlib.asynccontextmanager
async def serving(hud: Hud, tls: tuple[Path, Path] | None = None) -> AsyncIterator[str]:
    """Serve `hud` on a free port of 127.0.0.1; yield its ingestion URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    certfile, keyfile = (str(tls[0]), str(tls[1])) if tls else (None, None)
    config = uvicorn.Config(
        hud.app,
        lifespan="off",
        log_config=None,
        access_log=False,
        log_level="warning",
        ssl_certfile=certfile,
        ssl_keyfile=keyfile,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            assert not task.done(), "the HUD did not start"
            await asyncio.sleep(0.01)
        yield f"{'https' if tls else 'http'}://127.0.0.1:{port}{PATH}"
    finally:
        hud.release.set()
        server.should_exit = True
        await task
        sock.close()


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 (its own CA) and its key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert, key_file = directory / "hud.crt", directory / "hud.key"
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert, key_file


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}{PATH}"


async def test_a_post_carries_the_body_and_headers_and_returns_status_and_text() -> None:
    hud = Hud(201)
    origin = AiohttpOrigin(4, keepalive_seconds=30)
    async with serving(hud) as url:
        try:
            status, text = await origin.post(
                url, b'{"n":1}', {"content-type": "application/json", "x-t": "v"}, phase_seconds=5
            )
        finally:
            await origin.aclose()

    assert (status, text) == (201, '{"error":"answered 201"}')
    assert hud.seen[0]["body"] == b'{"n":1}'
    assert hud.seen[0]["headers"]["x-t"] == "v"
    assert hud.seen[0]["headers"]["content-length"] == "7"


async def test_https_to_a_hud_trusted_through_ssl_cert_file_keeps_one_connection_alive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tls = self_signed(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(tls[0]))
    hud = Hud(200)
    origin = AiohttpOrigin(4, keepalive_seconds=30)
    async with serving(hud, tls) as url:
        try:
            answers = [await origin.post(url, b"{}", {}, phase_seconds=5) for _ in range(3)]
        finally:
            await origin.aclose()

    assert [status for status, _ in answers] == [200, 200, 200]
    assert len({seen["peer"] for seen in hud.seen}) == 1  # one connection, kept alive


async def test_a_hud_with_an_untrusted_certificate_is_unreachable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    hud = Hud(200)
    origin = AiohttpOrigin(4, keepalive_seconds=30)
    async with serving(hud, self_signed(tmp_path)) as url:
        transport = HttpHudTransport(url, None, origin, retry_delay=0.01)
        try:
            with pytest.raises(HudUnreachable, match="ClientConnectorCertificateError"):
                await transport.send({"n": 1}, within=5)
        finally:
            await origin.aclose()

    assert hud.seen == []


async def test_the_hud_transport_sends_its_token_and_passes_a_4xx_back() -> None:
    hud = Hud(422)
    origin = AiohttpOrigin(4, keepalive_seconds=30)
    async with serving(hud) as url:
        transport = HttpHudTransport(url, "hud-secret", origin, retry_delay=0.01)
        try:
            answer = await transport.send({"n": 1}, within=5)
        finally:
            await transport.aclose()

    assert (answer.status_code, answer.message) == (422, '{"error":"answered 422"}')
    assert hud.seen[0]["headers"]["x-hud-internal-bot"] == "hud-secret"
    assert hud.seen[0]["headers"]["content-type"] == "application/json"


async def test_a_hud_5xx_is_unreachable_after_its_retry() -> None:
    hud = Hud(503)
    origin = AiohttpOrigin(4, keepalive_seconds=30)
    async with serving(hud) as url:
        transport = HttpHudTransport(url, None, origin, retry_delay=0.01)
        try:
            with pytest.raises(HudUnreachable, match="503"):
                await transport.send({"n": 1}, within=5)
        finally:
            await transport.aclose()

    assert len(hud.seen) == 2  # the first try and one retry


async def test_a_closed_port_is_unreachable() -> None:
    origin = AiohttpOrigin(4, keepalive_seconds=30)
    transport = HttpHudTransport(closed_port_url(), None, origin, retry_delay=0.01)
    try:
        with pytest.raises(HudUnreachable, match="ClientConnectorError"):
            await transport.send({"n": 1}, within=2)
    finally:
        await transport.aclose()


async def test_a_hud_that_does_not_answer_times_out_within_the_phase() -> None:
    hud = Hud(200, hold=True)
    origin = AiohttpOrigin(4, keepalive_seconds=30)
    async with serving(hud) as url:
        try:
            with pytest.raises(TimeoutError):
                await origin.post(url, b"{}", {}, phase_seconds=0.2)
        finally:
            await origin.aclose()

    assert len(hud.seen) == 1  # the body arrived; its answer never came


async def test_a_closed_origin_opens_anew_on_the_next_post() -> None:
    hud = Hud(200)
    origin = AiohttpOrigin(1, keepalive_seconds=30)
    async with serving(hud) as url:
        try:
            await origin.post(url, b"{}", {}, phase_seconds=5)
            await origin.aclose()
            status, _ = await origin.post(url, b"{}", {}, phase_seconds=5)
        finally:
            await origin.aclose()

    assert status == 200
    assert len({seen["peer"] for seen in hud.seen}) == 2


def test_an_origin_needs_a_connection() -> None:
    with pytest.raises(ValueError, match="at least one connection"):
        AiohttpOrigin(0, keepalive_seconds=30)


async def test_the_relays_forwarder_delivers_over_its_own_connections(tmp_path: Path) -> None:
    hud = Hud(200)
    store = await SqliteStateStore.open(tmp_path / "state.db")
    try:
        async with serving(hud) as url:
            forwarder = forwarder_from_settings(
                Settings(hud_url=url, hud_token="hud-secret"), store
            )
            try:
                result = await forwarder.forward({"trusted": {}, "untrusted": {}})
            finally:
                await forwarder.aclose()
        assert result.delivery is Delivery.DELIVERED
        assert (await store.queue_stats(HUD_QUEUE)).depth == 0
    finally:
        await store.close()

    assert hud.seen[0]["body"] == b'{"trusted":{},"untrusted":{}}'
    assert hud.seen[0]["headers"]["x-hud-internal-bot"] == "hud-secret"

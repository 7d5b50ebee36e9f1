"""POSTs to one keep-alive HTTPS origin (the HUD) through aiohttp's client: the cheapest measured.

Measured alone (`bench.hud_clients`, 26 KB bodies over HTTPS, 64 in flight, µs of the
client's CPU per request): aiohttp ~230-340, httpcore's pool used directly ~1,090-1,240,
httpx's transport ~1,240-1,390, httpx's client ~1,510-1,620, httpx over HTTP/2 ~1,780.
Most of the gap is TLS: httpx runs it through anyio's `TLSStream` (an `ssl.MemoryBIO`
pumped in Python, per read and per write), aiohttp hands the socket to the event loop's
own TLS transport (uvloop's, in C, under `crcr serve`). aiohttp's connector also hands out
an idle connection without scanning the pool, so one pool serves all the connections.

`post` raises `aiohttp.ClientError` (no answer: refused, reset, a bad status line) or
`TimeoutError` (a phase took longer than `phase_seconds`); the caller maps both.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping

import aiohttp
import httpx


class AiohttpOrigin:
    """Up to `connections` keep-alive connections to one origin, opened on first use.

    The session is made on the first `post`, inside the running loop, as aiohttp asks;
    `aclose` closes it (a later `post` opens a new one).
    """

    def __init__(self, connections: int, *, keepalive_seconds: float) -> None:
        if connections < 1:
            raise ValueError("AiohttpOrigin needs at least one connection")
        self.connections = connections
        self._keepalive_seconds = keepalive_seconds
        self._tls: ssl.SSLContext | None = None
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        if self._tls is None:
            # httpx's context: the same trust store (`SSL_CERT_FILE`, `SSL_CERT_DIR`) as
            # the relay's other clients.
            self._tls = httpx.create_ssl_context()
        connector = aiohttp.TCPConnector(
            ssl=self._tls,
            limit=self.connections,
            limit_per_host=self.connections,
            keepalive_timeout=self._keepalive_seconds,
        )
        # No cookie jar, no proxy from the environment (httpx's transports read none either).
        return aiohttp.ClientSession(
            connector=connector,
            cookie_jar=aiohttp.DummyCookieJar(),
            trust_env=False,
            auto_decompress=True,
        )

    async def post(
        self, url: str, content: bytes, headers: Mapping[str, str], *, phase_seconds: float
    ) -> tuple[int, str]:
        """POST `content`; the status and the body's text, read whole.

        `phase_seconds` bounds waiting for a connection and opening it (`connect`) and
        each wait for the answer's bytes (`sock_read`); the caller bounds the whole
        exchange, the body's write included.
        """
        if self._session is None or self._session.closed:
            self._session = self._open()
        timeout = aiohttp.ClientTimeout(
            total=None, connect=phase_seconds, sock_connect=phase_seconds, sock_read=phase_seconds
        )
        async with self._session.post(
            url, data=content, headers=headers, timeout=timeout, allow_redirects=False
        ) as response:
            return response.status, await response.text(errors="replace")

    async def aclose(self) -> None:
        """Close every pooled connection."""
        if self._session is not None:
            await self._session.close()
            self._session = None

"""Connections to one origin (GitHub's API): httpx transports used directly.

GitHub's REST calls need none of the layers httpx's client wraps each request in (URL
merging, cookies, auth and redirect hooks, the event hooks); measured alone
(`bench.hud_clients`, 26 KB bodies over HTTPS, 64 in flight) the client costs ~1.2 ms of
CPU per request and its public transport API (`AsyncHTTPTransport.handle_async_request`)
~0.9 ms; httpcore's pool used directly ~0.8 ms, but would trade httpx's exceptions and
models for its own. The HUD forward, one POST shape to one origin, went further, to
aiohttp (`crcr.web.aiohttp_origin`); tests still lend these pools to it. Connections
are spread over pools of `CONNECTIONS_PER_POOL`, as `crcr.web.http_pools.ClientPools`
does: httpcore scans a pool's connections for each request, so many small pools cost
less than one large one.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import httpx

from crcr.web.http_pools import CONNECTIONS_PER_POOL, KEEPALIVE_SECONDS


class TransportPools:
    """Hand out httpx transports in turn and send through them without a client."""

    def __init__(self, transports: Sequence[httpx.AsyncBaseTransport]) -> None:
        if not transports:
            raise ValueError("TransportPools needs at least one transport")
        self.transports = list(transports)
        self._turn = itertools.cycle(self.transports)

    @classmethod
    def keep_alive(
        cls, connections: int, *, transport: httpx.AsyncBaseTransport | None = None
    ) -> TransportPools:
        """About `connections` keep-alive connections in pools of `CONNECTIONS_PER_POOL`.

        One TLS context serves every pool (`SSL_CERT_FILE` is honoured, as by httpx).
        `transport`, if given, is the only one (tests: an app in process, a mock).
        """
        if transport is not None:
            return cls([transport])
        pools = max(1, -(-connections // CONNECTIONS_PER_POOL))
        per_pool = -(-connections // pools)
        limits = httpx.Limits(
            max_connections=per_pool,
            max_keepalive_connections=per_pool,
            keepalive_expiry=KEEPALIVE_SECONDS,
        )
        tls = httpx.create_ssl_context()
        return cls([httpx.AsyncHTTPTransport(verify=tls, limits=limits) for _ in range(pools)])

    async def post(
        self, url: str, content: bytes, headers: Mapping[str, str], *, phase_seconds: float
    ) -> tuple[int, str]:
        """POST `content`; the status and the body's text, read whole.

        Raises `httpx.TransportError` (its `TimeoutException` after `phase_seconds` in
        any one phase: connect, write, read, pool) as the client would; the caller
        bounds the whole exchange.
        """
        request = httpx.Request(
            "POST",
            url,
            headers=headers,
            content=content,
            extensions={"timeout": httpx.Timeout(phase_seconds).as_dict()},
        )
        response = await self.send(request)
        return response.status_code, response.text

    async def send(self, request: httpx.Request) -> httpx.Response:
        """Send `request` on the next pool's connections; the response, read whole.

        Its timeouts are the request's own (`extensions["timeout"]`, httpx's default of
        5 s per phase when absent).
        """
        response = await next(self._turn).handle_async_request(request)
        try:
            await response.aread()
        finally:
            await response.aclose()
        response.request = request
        return response

    async def aclose(self) -> None:
        """Close every pooled connection."""
        for transport in self.transports:
            await transport.aclose()

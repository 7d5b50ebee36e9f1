"""An httpx transport that sends on aiohttp's connection pool: half of httpx's CPU.

A fan-out sends one `repository_dispatch` per downstream repo, so the relay's CPU per
dispatch is mostly the HTTP client's. Measured on loopback (`bench.github_clients`:
1,000 POSTs of 25 KB, 100 in flight, a server answering after 50 ms; load 1.2), httpx's
own transport on pools of 4 cost 0.80-0.89 ms of CPU per request, httpx over HTTP/2
(`h2`, one connection) 1.24-1.26 ms, and this transport 0.42-0.44 ms. This keeps
httpx's `Request`, `Response` and exceptions on every side of `GitHubHttp`, and lets
aiohttp do the connection handling and the wire.
"""

from __future__ import annotations

import aiohttp
import httpx

DROPPED_REQUEST_HEADERS = frozenset({"host", "content-length", "transfer-encoding"})
"""aiohttp derives these from the URL and the body itself."""


class AiohttpTransport(httpx.AsyncBaseTransport):
    """Send httpx requests through one `aiohttp.ClientSession` (made on first use).

    Bodies come back as sent (no decompression here): httpx's `Response` decodes them
    by their `content-encoding`, as with its own transports. Failures are raised as the
    httpx exceptions they correspond to, so callers catch `httpx.TransportError` alone.
    """

    def __init__(self, *, connections: int, keepalive_seconds: float) -> None:
        self._connections = connections
        self._keepalive_seconds = keepalive_seconds
        self._session: aiohttp.ClientSession | None = None

    def _session_here(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(
                limit=self._connections,
                keepalive_timeout=self._keepalive_seconds,
                ssl=httpx.create_ssl_context(),  # honours SSL_CERT_FILE, as httpx does
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                auto_decompress=False,
                skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
            )
        return self._session

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send `request`; the response with its body read whole."""
        timeouts = request.extensions.get("timeout", {})
        headers = [
            (name, value)
            for name, value in request.headers.multi_items()
            if name.lower() not in DROPPED_REQUEST_HEADERS
        ]
        try:
            async with self._session_here().request(
                request.method,
                str(request.url),
                headers=headers,
                data=request.content or None,
                allow_redirects=False,
                timeout=aiohttp.ClientTimeout(
                    sock_connect=timeouts.get("connect"), sock_read=timeouts.get("read")
                ),
            ) as answer:
                body = await answer.read()
                return httpx.Response(
                    answer.status,
                    headers=[
                        (name.decode("latin-1"), v.decode("latin-1"))
                        for name, v in answer.raw_headers
                    ],
                    content=body,
                    request=request,
                    extensions={"http_version": b"HTTP/1.1"},
                )
        except TimeoutError as exc:
            raise httpx.ReadTimeout(str(exc) or "timed out", request=request) from exc
        except aiohttp.ClientConnectorError as exc:
            raise httpx.ConnectError(str(exc), request=request) from exc
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError) as exc:
            raise httpx.RemoteProtocolError(str(exc), request=request) from exc
        except aiohttp.ClientError as exc:
            raise httpx.NetworkError(str(exc), request=request) from exc

    async def aclose(self) -> None:
        """Close the session and its pooled connections."""
        if self._session is not None:
            await self._session.close()
            self._session = None

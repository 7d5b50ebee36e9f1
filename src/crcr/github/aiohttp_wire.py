"""GitHub's calls on aiohttp's connection pool, without httpx's request and response models.

A fan-out sends one `repository_dispatch` per downstream repo, so the relay's CPU per
dispatch is mostly the HTTP client's. Measured on loopback (`bench.github_clients`:
1,000 POSTs of 25 KB, 100 in flight, a server answering after 50 ms; load 1.2), httpx's
own transport on pools of 4 cost 0.80-0.89 ms of CPU per request, httpx over HTTP/2
(`h2`, one connection) 1.24-1.26 ms, and aiohttp behind an httpx transport 0.42-0.44 ms.
Building httpx's `Request` and `Response` around each aiohttp call was then a third of
what was left (docs/benchmarks.md, "Fan-out per dispatch, this round"), so this wire
hands aiohttp plain strings and returns aiohttp's own headers and bytes.
"""

from __future__ import annotations

from collections.abc import Mapping

import aiohttp
import httpx

from crcr.github.wire import WireAnswer

NO_CONTENT_TYPE = ("Content-Type",)
"""aiohttp labels a bodiless POST `application/octet-stream`; GitHubHttp sends no type
there. Its other defaults (`Accept`, `Accept-Encoding`, `User-Agent`) only fill in what a
request lacks, and GitHubHttp sends all three: skipping them per session would cost
aiohttp a header merge on every request."""


class AiohttpWire:
    """Send through one `aiohttp.ClientSession` (made on first use, in the running loop).

    Each attempt, body included, ends after `deadline` seconds. Bodies come back as
    sent (no decompression here): `WireAnswer.response` has httpx decode them by their
    `content-encoding`, as with its own transports. Failures are raised as the httpx
    exceptions they correspond to, so `GitHubHttp` catches `httpx.TransportError`
    alone, whichever wire it has.
    """

    def __init__(self, *, connections: int, keepalive_seconds: float, deadline: float) -> None:
        self._connections = connections
        self._keepalive_seconds = keepalive_seconds
        # aiohttp's own timer bounds the whole attempt (a connection from the pool, the
        # body out, the answer in): one timer, not asyncio's `timeout()` around it.
        self._timeout = aiohttp.ClientTimeout(total=deadline)
        self._session: aiohttp.ClientSession | None = None

    def _session_here(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(
                limit=self._connections,
                keepalive_timeout=self._keepalive_seconds,
                ssl=httpx.create_ssl_context(),  # honours SSL_CERT_FILE, as httpx does
            )
            # No cookie jar, no proxy from the environment: httpx's transports read none.
            self._session = aiohttp.ClientSession(
                connector=connector,
                cookie_jar=aiohttp.DummyCookieJar(),
                trust_env=False,
                auto_decompress=False,
            )
        return self._session

    async def send(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes | None
    ) -> WireAnswer:
        """Send once; the answer with its body read whole (still encoded)."""
        try:
            async with self._session_here().request(
                method,
                url,
                headers=headers,
                data=body,
                allow_redirects=False,
                timeout=self._timeout,
                skip_auto_headers=NO_CONTENT_TYPE if body is None else None,
            ) as answer:
                return WireAnswer(answer.status, answer.headers, await answer.read())
        except TimeoutError as exc:
            raise httpx.ReadTimeout(str(exc) or "timed out") from exc
        except aiohttp.ClientConnectorError as exc:
            raise httpx.ConnectError(str(exc)) from exc
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError) as exc:
            raise httpx.RemoteProtocolError(str(exc)) from exc
        except aiohttp.ClientError as exc:
            raise httpx.NetworkError(str(exc)) from exc

    async def aclose(self) -> None:
        """Close the session and its pooled connections."""
        if self._session is not None:
            await self._session.close()
            self._session = None

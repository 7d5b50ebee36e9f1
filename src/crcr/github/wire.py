"""What one attempt of a GitHub call sends and gets back, below the retry loop.

`GitHubHttp`'s retry loop needs only an answer's status and headers (rate limits,
`Retry-After`) for every call, and its body only when a caller reads it or the call
failed. A `Wire` sends one attempt and returns a `WireAnswer` holding the body as it
came (still gzip-encoded, if it was): a dispatch, whose 204 has no body, never builds
httpx's `Request`/`Response` models, which were a third of the relay's CPU per dispatch
(docs/benchmarks.md, "Fan-out per dispatch, this round"). A caller that reads the body
gets an `httpx.Response`, decoded by httpx as before.

A wire raises `httpx.TransportError` (a `httpx.TimeoutException` for a timeout) when no
answer came, whatever it sends with, so the retry loop has one vocabulary of failures;
each bounds a whole attempt by its deadline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import httpx


@dataclass(frozen=True)
class WireAnswer:
    """One HTTP answer: status, headers (case-insensitive) and the body as sent.

    `raw` is still encoded as `content-encoding` says, when the headers say so.
    """

    status_code: int
    headers: Mapping[str, str]
    raw: bytes

    def response(self, method: str, url: str) -> httpx.Response:
        """The answer as an `httpx.Response`, its body decoded by its content-encoding."""
        items = self.headers.items()
        return httpx.Response(
            self.status_code,
            headers=list(items),
            content=self.raw,
            request=httpx.Request(method, url),
            extensions={"http_version": b"HTTP/1.1"},
        )


class Wire(Protocol):
    """Sends one attempt of a GitHub call."""

    async def send(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes | None
    ) -> WireAnswer:
        """Send once; the answer with its body read whole, or `httpx.TransportError`."""
        ...

    async def aclose(self) -> None:
        """Close pooled connections."""
        ...


class HttpxWire:
    """A wire over any httpx transport (tests: an app in process, a `MockTransport`).

    Each attempt, body included, ends after `deadline` seconds.
    """

    def __init__(self, transport: httpx.AsyncBaseTransport, *, deadline: float) -> None:
        self._transport = transport
        self._deadline = deadline
        self._timeouts = httpx.Timeout(deadline).as_dict()

    async def send(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes | None
    ) -> WireAnswer:
        """Send once through the transport; the body as httpx decoded it.

        A transport's response may come already read (a `MockTransport`'s), so the body
        is taken decoded and its `content-encoding` dropped with the encoding.
        """
        request = httpx.Request(
            method, url, headers=headers, content=body, extensions={"timeout": self._timeouts}
        )
        try:
            async with asyncio.timeout(self._deadline):
                response = await self._transport.handle_async_request(request)
                try:
                    decoded = await response.aread()
                finally:
                    await response.aclose()
        except TimeoutError as exc:
            raise httpx.ReadTimeout(f"no answer within {self._deadline:g} s") from exc
        plain = [
            (name, value)
            for name, value in response.headers.multi_items()
            if name.lower() != "content-encoding"
        ]
        return WireAnswer(response.status_code, httpx.Headers(plain), decoded)

    async def aclose(self) -> None:
        """Close the transport."""
        await self._transport.aclose()

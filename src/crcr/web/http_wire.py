"""Lighter over the wire: gzip above a size threshold, and ETag / 304 on GET responses.

A dashboard kept open all day asks for the same pages and JSON again and again; most
answers are what the browser already holds. Every successful GET gets a weak ETag (a
digest of the body before compression, hence weak: the gzip and identity forms share
it) and `Cache-Control: no-cache` unless the route chose its own caching (the versioned
static assets are `immutable`), so a browser revalidates and gets an empty 304 when
nothing changed. Starlette's `GZipMiddleware` compresses what is left, above
`GZIP_MINIMUM_BYTES`; brotli would need a new compiled dependency for a few per cent
more on pages of a few KiB, so it is not offered.
"""

from __future__ import annotations

import hashlib

from fastapi import FastAPI
from starlette.datastructures import Headers, MutableHeaders
from starlette.middleware.gzip import GZipMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from crcr.web.head_requests import AnswerHead

GZIP_MINIMUM_BYTES = 1024
REVALIDATE = "no-cache"
_PASSED_ON = ("etag", "cache-control", "vary", "content-location", "expires")


def etag_of(body: bytes) -> str:
    """The weak validator of a body: the same bytes, the same tag."""
    return f'W/"{hashlib.sha256(body).hexdigest()[:20]}"'


def _matches(if_none_match: str, etag: str) -> bool:
    """RFC 9110's weak comparison against an If-None-Match list (or `*`)."""
    tags = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
    return "*" in tags or etag.removeprefix("W/") in tags


class ConditionalGet:
    """ASGI middleware: ETag every 200 answer to a GET/HEAD, and 304 it when it matches.

    The body is held until complete to digest it; the pages and JSON are a few KiB.
    Streams (`text/event-stream`) and answers that already carry an ETag pass through.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        if_none_match = Headers(scope=scope).get("if-none-match")
        start: Message | None = None
        chunks: list[bytes] = []

        async def hold(message: Message) -> None:
            nonlocal start
            if start is None and message["type"] == "http.response.start":
                headers = Headers(raw=message["headers"])
                streaming = headers.get("content-type", "").startswith("text/event-stream")
                if message["status"] != 200 or "etag" in headers or streaming:
                    await send(message)
                    return
                start = message
                return
            if start is None or message["type"] != "http.response.body":
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            await self._answer(start, b"".join(chunks), if_none_match, send)

        await self.app(scope, receive, hold)

    @staticmethod
    async def _answer(start: Message, body: bytes, if_none_match: str | None, send: Send) -> None:
        headers = MutableHeaders(scope=start)
        etag = etag_of(body)
        headers["etag"] = etag
        if "cache-control" not in headers:
            headers["cache-control"] = REVALIDATE
        if if_none_match is not None and _matches(if_none_match, etag):
            kept = [(k, v) for k, v in start["headers"] if k.decode().lower() in _PASSED_ON]
            await send({"type": "http.response.start", "status": 304, "headers": kept})
            await send({"type": "http.response.body", "body": b""})
            return
        await send(start)
        await send({"type": "http.response.body", "body": body})


def add_wire_middleware(app: FastAPI) -> None:
    """Conditional GET inside, compression outside (the ETag is the uncompressed body's),
    and HEAD outermost, so a HEAD gets the very headers its GET would."""
    app.add_middleware(ConditionalGet)
    app.add_middleware(GZipMiddleware, minimum_size=GZIP_MINIMUM_BYTES)
    app.add_middleware(AnswerHead)

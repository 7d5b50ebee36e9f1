"""Read a request body without letting a client make the server buffer more than a cap."""

from __future__ import annotations

import re
from collections.abc import Callable

from starlette.requests import ClientDisconnect, Request
from starlette.types import Receive, Scope

_DELIVERY_ID = re.compile(rb'"delivery_id"\s*:\s*"([A-Za-z0-9._:-]{1,100})"')


class BodyTooLarge(Exception):
    """The request body exceeds the endpoint's cap (413)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"body larger than {limit} bytes")
        self.limit = limit


class BodyCut(ClientDisconnect):
    """The client went away before sending its whole body; `received` is what came."""

    def __init__(self, received: bytes) -> None:
        super().__init__()
        self.received = received

    def delivery_id(self) -> str | None:
        """The `delivery_id` of a callback body, if it arrived before the cut."""
        found = _DELIVERY_ID.search(self.received)
        return found.group(1).decode() if found else None


def header(scope: Scope, name: bytes) -> str | None:
    """One request header of a bare ASGI scope (`name` in lower case), or None."""
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


async def read_capped_body(request: Request, limit: int) -> bytes:
    """`read_capped_asgi_body` for a Starlette request."""
    return await read_capped_asgi_body(request.scope, request.receive, limit)


async def read_capped_asgi_body(scope: Scope, receive: Receive, limit: int) -> bytes:
    """Read the body, refusing early on Content-Length and again while streaming.

    Content-Length may be absent (chunked) or lie, so the streamed size is checked too.
    Raises `BodyCut` (a `ClientDisconnect`) if the client goes away first: a caller
    that gave up is not the server's fault, and nothing may be written for it.
    """
    declared = header(scope, b"content-length") or ""
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(limit)
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise BodyCut(b"".join(chunks))
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(limit)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def read_capped_stream(
    request: Request, limit: int, on_chunk: Callable[[bytes], None]
) -> bytearray:
    """Read the body into one growing buffer, handing each chunk to `on_chunk` as it comes.

    For large bodies checked on the way in (the webhook's HMAC): a list of chunks joined
    at the end held the body twice at its peak; here it is held once.
    """
    declared = header(request.scope, b"content-length") or ""
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(limit)
    body = bytearray()
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            raise BodyCut(bytes(body))
        chunk: bytes = message.get("body", b"")
        if len(body) + len(chunk) > limit:
            raise BodyTooLarge(limit)
        on_chunk(chunk)
        body += chunk
        if not message.get("more_body", False):
            return body

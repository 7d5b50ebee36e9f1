"""Send an ASGI app a request whose client goes away after part of the body."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.types import ASGIApp, Message


async def post_then_vanish(
    app: ASGIApp, path: str, headers: Mapping[str, str], sent: bytes, declared: int
) -> int | None:
    """POST `sent` (of a body declared `declared` bytes long), then disconnect.

    Returns the status the app answered with, or None if it answered nothing.
    """
    incoming: list[Message] = [
        {"type": "http.request", "body": sent, "more_body": True},
        {"type": "http.disconnect"},
    ]
    answered: list[int] = []
    raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    raw.append((b"content-length", str(declared).encode()))
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": raw,
        "client": ("127.0.0.1", 50000),
        "server": ("relay", 80),
    }

    async def receive() -> Message:
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            answered.append(int(message["status"]))

    await app(scope, receive, send)
    return answered[0] if answered else None

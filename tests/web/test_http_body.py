"""Reading request bodies: capped, and a large streamed body held once, not twice."""

from __future__ import annotations

import tracemalloc

import pytest
from starlette.requests import Request
from starlette.types import Message

from crcr.web.http_body import BodyTooLarge, read_capped_stream

CHUNK = 64 * 1024


def request_streaming(size: int, *, declared: int | None = None) -> Request:
    """A request whose body of `size` bytes arrives in 64 KiB chunks, made on demand."""
    sent = 0

    async def receive() -> Message:
        nonlocal sent
        part = min(CHUNK, size - sent)
        sent += part
        return {"type": "http.request", "body": b"x" * part, "more_body": sent < size}

    headers = [] if declared is None else [(b"content-length", str(declared).encode())]
    return Request({"type": "http", "method": "POST", "headers": headers}, receive)


async def test_a_streamed_body_is_held_once_at_its_peak() -> None:
    size = 20 * 1024 * 1024
    seen = 0

    def count(chunk: bytes) -> None:
        nonlocal seen
        seen += len(chunk)

    tracemalloc.start()
    try:
        body = await read_capped_stream(request_streaming(size), size, count)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert len(body) == seen == size
    assert peak < 1.3 * size, f"peak {peak / size:.2f}x the body"


async def test_a_body_over_the_cap_is_refused_while_streaming() -> None:
    handed: list[int] = []
    with pytest.raises(BodyTooLarge):
        await read_capped_stream(
            request_streaming(10 * CHUNK), 3 * CHUNK, lambda c: handed.append(len(c))
        )
    assert sum(handed) <= 3 * CHUNK


async def test_a_declared_length_over_the_cap_is_refused_before_reading() -> None:
    with pytest.raises(BodyTooLarge):
        await read_capped_stream(request_streaming(0, declared=10**9), 1024, print)

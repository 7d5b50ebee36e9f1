"""Read a request body without letting a client make the server buffer more than a cap."""

from __future__ import annotations

from starlette.requests import Request


class BodyTooLarge(Exception):
    """The request body exceeds the endpoint's cap (413)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"body larger than {limit} bytes")
        self.limit = limit


async def read_capped_body(request: Request, limit: int) -> bytes:
    """Read the body, refusing early on Content-Length and again while streaming.

    Content-Length may be absent (chunked) or lie, so the streamed size is checked too.
    """
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(limit)
        chunks.append(chunk)
    return b"".join(chunks)

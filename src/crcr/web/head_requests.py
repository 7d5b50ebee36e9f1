"""HEAD answered wherever GET is: uptime checks and `curl -I` probe with HEAD.

FastAPI's routes declare GET only (Starlette's own `Route` adds HEAD, FastAPI's
`APIRoute` does not), so without this every page and probe answers HEAD with 405. The
request runs as a GET and its headers are sent unchanged (Content-Length included, as
RFC 9110 §9.3.2 allows); only the body is dropped. A path that has no GET still answers
405, with the router's own `Allow` header.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class AnswerHead:
    """ASGI middleware: run a HEAD request as a GET and send no body."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        finished = False

        async def without_body(message: Message) -> None:
            nonlocal finished
            if finished:
                return
            if message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return
                finished = True
                message = {"type": "http.response.body", "body": b""}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, without_body)

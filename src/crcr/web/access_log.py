"""One structured line per HTTP request: method, path, status, duration_ms, client.

Replaces uvicorn's access log, whose line is one pre-formatted string without the
duration. Probes and scrapes (`/metrics`, `/healthz`, `/readyz`) arrive every few seconds
from every load balancer and Prometheus; they are logged at DEBUG only, so the INFO log
shows traffic. The level check comes first: with the access log off (`--no-access-log`,
`CRCR_ACCESS_LOG=false`) a request costs one `isEnabledFor`.

A handler can put what it decided onto its request's line (`carry_on_request_line`), as
the audit trail does for every callback: a log line costs the callback path more than
any other part of its audit, so a callback is one line, not two, when the access log is on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from crcr.config.logging_setup import ACCESS_LOGGER

log = logging.getLogger(ACCESS_LOGGER)

QUIET_PATHS = frozenset({"/metrics", "/healthz", "/readyz"})


class _Carried:
    """What a handler put onto the request's line: a level, a few words, fields."""

    __slots__ = ("fields", "level", "words")

    def __init__(self) -> None:
        self.level = logging.NOTSET
        self.words = ""
        self.fields: Mapping[str, Any] = {}


_carried: ContextVar[_Carried | None] = ContextVar("crcr_access_log_carried", default=None)


def carry_on_request_line(level: int, words: str, fields: Mapping[str, Any]) -> bool:
    """Have the current request's access line say `words` with `fields`, at `level` or above.

    False when no access line will be written for this request (the access log is off,
    or the code runs outside a request): the caller then logs its own line.
    """
    carried = _carried.get()
    if carried is None:
        return False
    carried.level, carried.words, carried.fields = level, words, fields
    return True


class AccessLog:
    """ASGI middleware writing the access log line once the response has started."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        level = logging.DEBUG if path in QUIET_PATHS else logging.INFO
        if not log.isEnabledFor(level):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the server answers if the app raises before responding
        carried = _Carried()
        reset = _carried.set(carried)

        async def send_with_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_with_status)
        finally:
            _carried.reset(reset)
            duration_ms = round((time.perf_counter() - started) * 1000, 3)
            client = scope.get("client")
            method: str = scope["method"]
            log.log(
                max(level, carried.level),
                "%s %s %d %.1f ms%s%s",
                method,
                path,
                status,
                duration_ms,
                " " if carried.words else "",
                carried.words,
                extra={
                    **carried.fields,
                    "method": method,
                    "path": path,
                    "status": status,
                    "duration_ms": duration_ms,
                    "client": f"{client[0]}:{client[1]}" if client else None,
                },
            )

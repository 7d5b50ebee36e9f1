"""One structured line per HTTP request: method, path, status, duration_ms, client.

Replaces uvicorn's access log, whose line is one pre-formatted string without the
duration. Probes and scrapes (`/metrics`, `/healthz`, `/readyz`) arrive every few seconds
from every load balancer and Prometheus; they are logged at DEBUG only, so the INFO log
shows traffic. The level check comes first: with the access log off (`--no-access-log`,
`CRCR_ACCESS_LOG=false`) a request costs one `isEnabledFor`.
"""

from __future__ import annotations

import logging
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from crcr.logging_setup import ACCESS_LOGGER

log = logging.getLogger(ACCESS_LOGGER)

QUIET_PATHS = frozenset({"/metrics", "/healthz", "/readyz"})


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

        async def send_with_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_with_status)
        finally:
            duration_ms = round((time.perf_counter() - started) * 1000, 3)
            client = scope.get("client")
            method: str = scope["method"]
            log.log(
                level,
                "%s %s %d %.1f ms",
                method,
                path,
                status,
                duration_ms,
                extra={
                    "method": method,
                    "path": path,
                    "status": status,
                    "duration_ms": duration_ms,
                    "client": f"{client[0]}:{client[1]}" if client else None,
                },
            )

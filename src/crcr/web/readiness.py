"""`/readyz`: whether the stores this process needs answer, without saying why not.

A load balancer takes an instance out of rotation on a 503; the operator finds the
reason (host, port, path, driver error) in the WARNING log line, never in the public
body, which is the error contract's `{"detail"}` naming only which store failed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping

from fastapi.responses import JSONResponse
from sqlalchemy.exc import SQLAlchemyError

from crcr.stores.state import StateStoreUnavailable
from crcr.web.error_bodies import ErrorBody, error_response

log = logging.getLogger(__name__)

READY_TIMEOUT = 5.0
"""Seconds a store may take to answer before the instance counts as not ready."""

RESPONSES: dict[int | str, dict[str, object]] = {
    503: {"model": ErrorBody, "description": "A store does not answer."}
}

Ping = Callable[[], Awaitable[None]]


class NotReady(Exception):
    """A dependency other than a store cannot serve yet; the message is for the log only."""


async def readiness(checks: Mapping[str, Ping]) -> JSONResponse:
    """200 `{"status": "ok"}` if every named store answers in time, else a 503 naming it."""
    for name, ping in checks.items():
        try:
            async with asyncio.timeout(READY_TIMEOUT):
                await ping()
        except (NotReady, StateStoreUnavailable, TimeoutError, SQLAlchemyError, OSError) as exc:
            log.warning("not ready: %s unavailable: %s", name, exc)
            return error_response(503, f"not ready: {name} unavailable")
    return JSONResponse({"status": "ok"})

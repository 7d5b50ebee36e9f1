"""The one shape of every error body the relay and the HUD answer (SPEC §5).

`{"detail": "<message>"}` — the key PyTorch's relay answers with, in its callback Lambda
and in FastAPI alike, so a downstream's tooling reads both — plus, when known, `field`
(the offending field or setting), `request_id` (a 500's, also in the log line) and
`errors` (a list: each validation problem, or each failed dispatch of a 502).

The endpoints build their bodies here; `install_error_handlers` makes FastAPI's own
answers (404, 405, 422, an unexpected 500) take the same shape, and says so in the
OpenAPI document.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

log = logging.getLogger(__name__)

# "workflow.run_id: must be …" names its field first, the convention of every message here.
_FIELD_PREFIX = re.compile(r"^([A-Za-z_][\w\-]*(?:\.[\w\-]+|\[\d+\])*): ")


class ErrorBody(BaseModel):
    """An error answer (SPEC §5)."""

    detail: str = Field(examples=["workflow.run_id: required"])
    field: str | None = Field(default=None, examples=["workflow.run_id"])
    request_id: str | None = Field(default=None, description="A 500's id, as in the log line.")
    errors: list[dict[str, Any]] | None = Field(
        default=None, description="Validation problems, or a 502's failed dispatches."
    )


def error_body(
    detail: str,
    *,
    field: str | None = None,
    request_id: str | None = None,
    errors: list[Any] | None = None,
) -> dict[str, Any]:
    """The body for `detail`; `field` defaults to the one the message starts with."""
    body: dict[str, Any] = {"detail": detail}
    named = field or field_of(detail)
    if named:
        body["field"] = named
    if request_id:
        body["request_id"] = request_id
    if errors is not None:
        body["errors"] = errors
    return body


def field_of(message: str) -> str | None:
    """The field a message names first (`"payload.after: differs"` → `payload.after`)."""
    match = _FIELD_PREFIX.match(message)
    return match.group(1) if match else None


def new_request_id() -> str:
    """An id to put in a 500's body and in the log line that explains it."""
    return uuid.uuid4().hex


def error_response(
    status_code: int, detail: str, headers: Mapping[str, str] | None = None, **optional: Any
) -> JSONResponse:
    """A `JSONResponse` carrying `error_body(detail, **optional)`."""
    return JSONResponse(error_body(detail, **optional), status_code=status_code, headers=headers)


def install_error_handlers(app: FastAPI) -> None:
    """FastAPI's own error answers in the contract's shape (documented in `openapi_document`)."""
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(Exception, _unexpected_error)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
    return error_response(exc.status_code, detail, headers=exc.headers)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    # The offending input is not echoed back: it may be large, or someone's secret.
    errors = [
        {"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")), "type": e.get("type", "")}
        for e in exc.errors()
    ] or [{"loc": [], "msg": "invalid request", "type": "value_error"}]
    first = errors[0]
    field = ".".join(str(part) for part in first["loc"][1:]) or None
    detail = f"{field}: {first['msg']}" if field else first["msg"]
    return error_response(422, detail, field=field, errors=errors)


async def _unexpected_error(request: Request, exc: Exception) -> JSONResponse:
    request_id = new_request_id()
    log.error(
        "%s %s failed (request id %s)",
        request.method,
        request.url.path,
        request_id,
        exc_info=exc,
        extra={"request_id": request_id},
    )
    return error_response(500, "internal error", request_id=request_id)

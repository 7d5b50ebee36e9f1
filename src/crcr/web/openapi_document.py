"""The OpenAPI document (`/openapi.json`, `/docs`): FastAPI's, completed where it cannot see.

Routes that read their raw body (the HUD's results route here, the relay's through
`ExtraOperations`) are invisible to FastAPI. Operators and downstream authors read this
document, and the fuzzing test holds the code to it, so each gets its body and every
status code of SPEC §4-§6. Error answers are `ErrorBody` everywhere, FastAPI's 422
included.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel

from crcr.web.error_bodies import ErrorBody

REF = "#/components/schemas/{model}"


def error_responses(statuses: dict[int, str]) -> dict[str, Any]:
    """OpenAPI responses for error statuses, each an `ErrorBody`, with its meaning."""
    return {
        str(status): {
            "description": meaning,
            "content": {"application/json": {"schema": {"$ref": REF.format(model="ErrorBody")}}},
        }
        for status, meaning in statuses.items()
    }


RESULTS_BODY = {
    "type": "object",
    "description": "SPEC §6: what the relay vouches for, and the downstream's own report.",
    "required": ["trusted", "untrusted"],
    "properties": {
        "trusted": {
            "type": "object",
            "required": ["verified_repo"],
            "properties": {
                "verified_repo": {"type": "string", "examples": ["org/backend"]},
                "downstream_repo_level": {"type": "string", "examples": ["L2"]},
                "ci_metrics": {"type": "object"},
                "dispatch": {"type": "object"},
            },
        },
        "untrusted": {
            "type": "object",
            "required": ["callback_payload"],
            "properties": {"callback_payload": {"type": "object"}},
        },
    },
}

RESULTS_ERRORS = {
    400: "The body is malformed; `detail` names the field.",
    401: "Missing or wrong x-hud-internal-bot header.",
    413: "Body larger than 2 MiB.",
    500: "Our fault; `request_id` matches the log line.",
}


@dataclass(frozen=True)
class ExtraOperations:
    """Routes FastAPI cannot describe, with the models their documents refer to."""

    paths: dict[str, dict[str, Any]] = field(default_factory=dict)
    models: tuple[type[BaseModel], ...] = ()
    security_schemes: dict[str, dict[str, Any]] = field(default_factory=dict)


def complete_openapi(app: FastAPI, extra: ExtraOperations | None = None) -> None:
    """Make `app.openapi()` return the completed document (built once, then cached).

    `extra` adds what the serving app knows and this module must not import (the relay's
    bare routes), so the HTTP edge stays below the packages that use it.
    """
    extra = extra or ExtraOperations()
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = build()
        schemas = schema.setdefault("components", {}).setdefault("schemas", {})
        models: tuple[type[BaseModel], ...] = (ErrorBody, *extra.models)
        for model in models:
            for name, definition in _definitions(model).items():
                schemas.setdefault(name, definition)
        # FastAPI documents its 422 as `HTTPValidationError`; crcr answers an ErrorBody.
        if "HTTPValidationError" in schemas:
            schemas["HTTPValidationError"] = {"$ref": REF.format(model="ErrorBody")}
        paths = schema.setdefault("paths", {})
        results = paths.get("/api/crcr/results", {}).get("post")
        if results is not None:
            # The route reads its raw body (capped, then parsed): FastAPI cannot see it.
            results["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": RESULTS_BODY}},
            }
            results["responses"].update(error_responses(RESULTS_ERRORS))
        if extra.security_schemes:
            schema["components"].setdefault("securitySchemes", {}).update(extra.security_schemes)
        paths.update(extra.paths)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def _definitions(model: type[BaseModel]) -> dict[str, Any]:
    """`model`'s JSON schema and those it refers to, keyed by component name."""
    schema = model.model_json_schema(ref_template=REF, mode="validation")
    nested = schema.pop("$defs", {})
    return {model.__name__: schema, **nested}

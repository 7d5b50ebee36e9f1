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


def _text(longest: int, *, required: bool = False, **string: Any) -> dict[str, Any]:
    """A text field as the HUD reads it: a string, or an integer it turns into one.

    Empty or null counts as absent; the integer's digits must fit the length too.
    """
    # JSON integers past 64 bits are read as floats (orjson), which the HUD refuses.
    fitting = {
        "type": "integer",
        "minimum": max(1 - 10 ** (longest - 1), -(2**63)),
        "maximum": min(10**longest - 1, 2**64 - 1),
    }
    text = {"type": "string", "maxLength": longest, **string}
    if required:
        return {"anyOf": [{**text, "minLength": 1}, fitting]}
    return {"anyOf": [text, fitting, {"type": "null"}]}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def _object(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    return {"type": "object", "required": list(required), "properties": properties}


# What the HUD's ingestion (`hud.write.ingest`, `hud.write.fields`) accepts: the fuzzing
# test holds that a body valid here is stored and one invalid here refused. Calendar
# days stop at 28 in the time pattern because a pattern cannot know month lengths.
_INT32 = 2**31 - 1
_COUNT = _nullable({"type": "integer", "minimum": 0, "maximum": _INT32})
_PR_NUMBER = {
    "anyOf": [
        {"type": "integer", "minimum": 0, "maximum": _INT32},
        {"type": "string", "pattern": "^[0-9]{1,9}$"},
        {"type": "null"},
    ]
}
_TIME = {
    "anyOf": [
        {
            "type": "string",
            "pattern": r"^([1-9][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])"
            r"T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{6})?(Z|[+-]0[0-9]:[0-5][0-9])?)?$",
            "examples": ["2026-11-27T09:00:00Z"],
        },
        {"type": "null"},
    ]
}
_SECONDS = _nullable({"type": "number", "minimum": 0, "maximum": 1e9})
_STATUSES = ["queued", "requested", "waiting", "pending", "in_progress", "completed"]
_WORKFLOW = _object(
    {
        "status": {"enum": _STATUSES},
        "conclusion": _nullable({"type": "string", "pattern": "^([a-z_]{1,30})?$"}),
        "name": _text(300, required=True),
        "job_name": _text(300),
        "run_id": _text(40, required=True, examples=["9001"]),
        "run_attempt": {
            "anyOf": [
                {"type": "string", "pattern": "^(0*[1-9][0-9]*)?$", "maxLength": 9},
                {"type": "integer", "minimum": 1, "maximum": 999_999_999},
                {"type": "null"},
            ]
        },
        "check_run_id": _text(40),
        "started_at": _TIME,
        "completed_at": _TIME,
        "url": _text(2000),
        "artifact_url": _text(2000),
        "test_results": _nullable(
            _object({n: _COUNT for n in ("passed", "failed", "skipped", "total")})
        ),
    },
    "status",
    "name",
    "run_id",
)
RESULTS_BODY = {
    **_object(
        {
            "trusted": _object(
                {
                    "verified_repo": {
                        "type": "string",
                        "maxLength": 200,
                        "pattern": "^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$",
                        "examples": ["org/backend"],
                    },
                    "downstream_repo_level": _text(8, examples=["L2"]),
                    "ci_metrics": _nullable(
                        _object({"queue_time": _SECONDS, "execution_time": _SECONDS})
                    ),
                    "confirmed": _nullable({"type": "boolean"}),
                    "confirmation": _nullable(
                        _object(
                            {
                                "github_conclusion": _nullable(
                                    {"type": "string", "minLength": 1, "maxLength": 30}
                                )
                            }
                        )
                    ),
                    "dispatch": _nullable(
                        _object(
                            {
                                "upstream_repo": _text(200, required=True),
                                "event_type": _text(40, required=True),
                                "head_sha": _text(64),
                                "pr_number": _PR_NUMBER,
                            },
                            "upstream_repo",
                            "event_type",
                        )
                    ),
                },
                "verified_repo",
            ),
            "untrusted": _object(
                {
                    "callback_payload": _object(
                        {
                            "event_type": {"description": "Required without trusted.dispatch"},
                            "delivery_id": _text(200, required=True),
                            "payload": {"description": "The echoed webhook payload"},
                            "workflow": _WORKFLOW,
                        },
                        "delivery_id",
                        "workflow",
                    )
                },
                "callback_payload",
            ),
        },
        "trusted",
        "untrusted",
    ),
    "description": "SPEC §6: what the relay vouches for, and the downstream's own report.",
    # Without `trusted.dispatch` (a body from PyTorch's relay) the event type and PR
    # number are read from the echoed callback and webhook payload, and held to its rules.
    "if": {"properties": {"trusted": _object({"dispatch": {"type": "object"}}, "dispatch")}},
    "else": {
        "properties": {
            "untrusted": {
                "properties": {
                    "callback_payload": {
                        "required": ["event_type"],
                        "properties": {
                            "event_type": _text(40, required=True),
                            "payload": {
                                "anyOf": [
                                    {"type": "null"},
                                    {
                                        "type": "object",
                                        "properties": {
                                            "pull_request": {
                                                "anyOf": [
                                                    {"not": {"type": "object"}},
                                                    {"properties": {"number": _PR_NUMBER}},
                                                ]
                                            }
                                        },
                                    },
                                ]
                            },
                        },
                    }
                }
            }
        }
    },
}

PATH_SKIPS_BODY = {
    "type": "object",
    "required": ["upstream_repo", "pr_number", "head_sha", "delivery_id", "skipped"],
    "properties": {
        "upstream_repo": {"type": "string", "pattern": "^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$"},
        "pr_number": {"type": "integer", "minimum": 1, "maximum": 2**31 - 1},
        "head_sha": {"type": "string", "pattern": "^[0-9a-fA-F]{7,64}$"},
        "delivery_id": {"type": "string", "minLength": 1, "maxLength": 200},
        "skipped": {
            "type": "array",
            "maxItems": 1000,
            "items": {"type": "string", "pattern": "^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$"},
        },
    },
}
"""`POST /api/crcr/path-skips` (SPEC §15): the backends a PR head skipped by paths."""

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
        skips = paths.get("/api/crcr/path-skips", {}).get("post")
        if skips is not None:  # a raw body too (`crcr.hud.write.path_skips`)
            skips["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": PATH_SKIPS_BODY}},
            }
            skips["responses"].update(error_responses(RESULTS_ERRORS))
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

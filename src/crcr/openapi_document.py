"""The OpenAPI document (`/openapi.json`, `/docs`): FastAPI's, completed where it cannot see.

The callback endpoint is a bare ASGI route (the hot path reads its own body) and the
webhook reads its raw body for the signature, so FastAPI infers neither body nor any
status but 200. Operators and downstream authors read this document, and the fuzzing
test holds the code to it, so each gets its body and every status code of SPEC §4-§6
here. Error answers are `ErrorBody` everywhere, FastAPI's 422 included.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, Field

from crcr.error_bodies import ErrorBody
from crcr.relay.callback.schema import CallbackBody

_REF = "#/components/schemas/{model}"


class CallbackAnswer(BaseModel):
    """A callback that was not refused: `accepted`, `duplicate`, `ignored` or `queued`."""

    status: str = Field(examples=["accepted"])


class WebhookAnswer(BaseModel):
    """A webhook delivery that was not refused (SPEC §4): relayed, ignored, or acted on."""

    model_config = ConfigDict(extra="allow")

    ok: bool | None = None
    dispatched: list[str] | None = Field(default=None, examples=[["org/backend"]])
    failed: list[dict[str, Any]] | None = None
    duplicate: list[str] | None = None
    trimmed: bool | None = None
    ignored: bool | None = None
    reason: str | None = Field(default=None, examples=["issues is not relayed"])


def error_responses(statuses: dict[int, str]) -> dict[str, Any]:
    """OpenAPI responses for error statuses, each an `ErrorBody`, with its meaning."""
    return {
        str(status): {
            "description": meaning,
            "content": {"application/json": {"schema": {"$ref": _REF.format(model="ErrorBody")}}},
        }
        for status, meaning in statuses.items()
    }


CALLBACK_ERRORS = {
    400: "Schema, binding or state-machine refusal; `detail` names the field.",
    401: "The OIDC token is missing, malformed, expired, or not for this audience.",
    403: "The token's repository is not the allowlisted one (renamed or re-created).",
    409: "Conflicts with the job's recorded state (a second, different completion).",
    413: "Body larger than 1 MiB.",
    422: "The HUD refused the result (its 4xx is passed on).",
    429: "Over CRCR_RATE_LIMIT_PER_MIN for this repository; see Retry-After.",
    500: "Our fault; `request_id` matches the log line.",
    503: "State store or OIDC keys unreachable; retry after Retry-After.",
}

WEBHOOK_ERRORS = {
    400: "Unsigned, or a header or the JSON body is missing or malformed.",
    401: "X-Hub-Signature-256 does not match the body.",
    413: "Body larger than GitHub's 25 MB.",
    422: "The payload cannot be trimmed to fit a repository_dispatch.",
    500: "Our fault; `request_id` matches the log line.",
    502: "No dispatch (or re-run) succeeded; `errors` lists each failure.",
    503: "The state store is unreachable; GitHub redelivers.",
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


def _json(model: type[BaseModel], description: str) -> dict[str, Any]:
    ref = {"$ref": _REF.format(model=model.__name__)}
    return {"description": description, "content": {"application/json": {"schema": ref}}}


def _callback_operation() -> dict[str, Any]:
    body = CallbackBody.__name__
    return {
        "tags": ["relay"],
        "summary": "Report a downstream CI job's status (SPEC §5)",
        "operationId": "github_callback",
        "security": [{"oidc": []}],
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": _REF.format(model=body)}}},
        },
        "responses": {
            "200": _json(CallbackAnswer, "Accepted, duplicate, or ignored (below L2)."),
            "202": _json(CallbackAnswer, "Accepted; the HUD write is queued for retry."),
            **error_responses(CALLBACK_ERRORS),
        },
    }


def _webhook_operation() -> dict[str, Any]:
    def header(name: str, description: str) -> dict[str, Any]:
        return {
            "name": name,
            "in": "header",
            "required": True,
            "description": description,
            "schema": {"type": "string"},
        }

    return {
        "tags": ["relay"],
        "summary": "Receive an upstream GitHub webhook delivery (SPEC §4)",
        "operationId": "github_webhook",
        "parameters": [
            header("X-Hub-Signature-256", "sha256=<hex HMAC-SHA256 of the raw body>"),
            header("X-GitHub-Event", "The event name"),
            header("X-GitHub-Delivery", "The delivery id"),
        ],
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"type": "object"}}},
        },
        "responses": {
            "200": _json(WebhookAnswer, "Relayed, ignored, or acted on."),
            **error_responses(WEBHOOK_ERRORS),
        },
    }


def complete_openapi(app: FastAPI, *, relay: bool) -> None:
    """Make `app.openapi()` return the completed document (built once, then cached)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = build()
        schemas = schema.setdefault("components", {}).setdefault("schemas", {})
        models: list[type[BaseModel]] = [ErrorBody]
        if relay:
            models += [CallbackBody, CallbackAnswer, WebhookAnswer]
        for model in models:
            for name, definition in _definitions(model).items():
                schemas.setdefault(name, definition)
        # FastAPI documents its 422 as `HTTPValidationError`; crcr answers an ErrorBody.
        if "HTTPValidationError" in schemas:
            schemas["HTTPValidationError"] = {"$ref": _REF.format(model="ErrorBody")}
        paths = schema.setdefault("paths", {})
        results = paths.get("/api/crcr/results", {}).get("post")
        if results is not None:
            # The route reads its raw body (capped, then parsed): FastAPI cannot see it.
            results["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": RESULTS_BODY}},
            }
            results["responses"].update(error_responses(RESULTS_ERRORS))
        if relay:
            schema["components"].setdefault("securitySchemes", {})["oidc"] = {
                "type": "http",
                "scheme": "bearer",
                "bearerFormat": "JWT (a GitHub Actions or Buildkite OIDC token)",
            }
            for path in ("/github/callback", "/github/callback/"):
                paths[path] = {"post": {**_callback_operation(), "operationId": _op_id(path)}}
            paths["/github/webhook"] = {"post": _webhook_operation()}
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def _op_id(path: str) -> str:
    return "github_callback_slash" if path.endswith("/") else "github_callback"


def _definitions(model: type[BaseModel]) -> dict[str, Any]:
    """`model`'s JSON schema and those it refers to, keyed by component name."""
    schema = model.model_json_schema(ref_template=_REF, mode="validation")
    nested = schema.pop("$defs", {})
    return {model.__name__: schema, **nested}

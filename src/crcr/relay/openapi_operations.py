"""The relay's two bare routes as OpenAPI operations (SPEC §4, §5), for `/openapi.json`.

The callback endpoint is a bare ASGI route (the hot path reads its own body) and the
webhook reads its raw body for the signature, so FastAPI infers neither body nor any
status but 200; each gets its body and every status code here.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from crcr.relay.callback.schema import CallbackBody
from crcr.web.openapi_document import REF, ExtraOperations, error_responses


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


def _json(model: type[BaseModel], description: str) -> dict[str, Any]:
    ref = {"$ref": REF.format(model=model.__name__)}
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
            "content": {"application/json": {"schema": {"$ref": REF.format(model=body)}}},
        },
        "responses": {
            "200": _json(CallbackAnswer, "Accepted, duplicate, or ignored (below L2)."),
            "202": _json(CallbackAnswer, "Accepted; the HUD write is queued for retry."),
            **error_responses(CALLBACK_ERRORS),
        },
    }


def _webhook_operation() -> dict[str, Any]:
    def header(name: str, description: str, pattern: str) -> dict[str, Any]:
        return {
            "name": name,
            "in": "header",
            "required": True,
            "description": description,
            "schema": {"type": "string", "pattern": pattern},
        }

    # As the route reads them: an empty or malformed header is refused (400).
    return {
        "tags": ["relay"],
        "summary": "Receive an upstream GitHub webhook delivery (SPEC §4)",
        "operationId": "github_webhook",
        "parameters": [
            header(
                "X-Hub-Signature-256",
                "sha256=<hex HMAC-SHA256 of the raw body>",
                "^sha256=[0-9a-f]{64}$",
            ),
            header("X-GitHub-Event", "The event name", "^[a-z_]{1,50}$"),
            header("X-GitHub-Delivery", "The delivery id", "^[0-9A-Za-z-]{1,100}$"),
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


def _op_id(path: str) -> str:
    return "github_callback_slash" if path.endswith("/") else "github_callback"


def relay_operations() -> ExtraOperations:
    """What `complete_openapi` adds for an app that serves the relay."""
    paths: dict[str, dict[str, Any]] = {
        path: {"post": {**_callback_operation(), "operationId": _op_id(path)}}
        for path in ("/github/callback", "/github/callback/")
    }
    paths["/github/webhook"] = {"post": _webhook_operation()}
    oidc = {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "JWT (a GitHub Actions or Buildkite OIDC token)",
    }
    return ExtraOperations(
        paths=paths,
        models=(CallbackBody, CallbackAnswer, WebhookAnswer),
        security_schemes={"oidc": oidc},
    )

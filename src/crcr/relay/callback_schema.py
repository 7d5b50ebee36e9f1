"""The callback body of SPEC §5 (schema version 1), checked field by field.

Errors name the field (`workflow.run_id: required`) because the message ends up in a
downstream CI log, read by someone who did not write the relay.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import orjson
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    ValidationError,
)

from crcr.relay.job_state import ReportedStatus

MAX_BODY_BYTES = 1024 * 1024
SELF_REPORT_EVENT_TYPES = frozenset({"nightly", "periodic"})


class CallbackRejected(Exception):
    """The body is unacceptable; `status_code` is 400 or 413, the message names the field."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message


def _string_or_integer(value: Any) -> Any:
    """Accept run ids as strings or ints: Buildkite's are UUID strings, GitHub's numbers."""
    if isinstance(value, bool):
        raise ValueError("must be a string or an integer")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        if not value.strip():
            raise ValueError("must not be empty")
        return value.strip()
    raise ValueError("must be a string or an integer")


def _optional_string_or_integer(value: Any) -> Any:
    if value is None or value == "":
        return None
    return _string_or_integer(value)


def _json_object(value: Any) -> Any:
    """Check the echoed webhook payload is an object, without copying it.

    Validating it as `dict[str, Any]` walked and copied all ~26 KB of it on every
    callback; nothing reads it but the HUD, which gets the document as received.
    """
    if not isinstance(value, dict):
        raise ValueError("must be an object")
    return value


RunIdentifier = Annotated[str, BeforeValidator(_string_or_integer)]
OptionalIdentifier = Annotated[str | None, BeforeValidator(_optional_string_or_integer)]
NonEmpty = Annotated[str, Field(min_length=1)]
JsonObject = Annotated[dict[str, Any], PlainValidator(_json_object)]


class TestCounts(BaseModel):
    """Optional test counts."""

    model_config = ConfigDict(extra="allow")

    passed: int = Field(default=0, ge=0)
    failed: int = Field(default=0, ge=0)
    skipped: int = Field(default=0, ge=0)


class Workflow(BaseModel):
    """The `workflow` object the reporter adds to the echoed client payload."""

    model_config = ConfigDict(extra="allow")

    schema_version: OptionalIdentifier = "1"
    status: ReportedStatus
    conclusion: str | None = None
    name: NonEmpty
    url: str | None = None
    run_id: RunIdentifier
    run_attempt: RunIdentifier = "1"
    job_name: str = ""
    check_run_id: OptionalIdentifier = None
    started_at: str | None = None
    completed_at: str | None = None
    test_results: TestCounts | None = None
    artifact_url: str | None = None


class CallbackBody(BaseModel):
    """A callback body: the dispatch's client payload echoed back, plus `workflow`."""

    model_config = ConfigDict(extra="allow")

    event_type: str | None = None
    delivery_id: NonEmpty
    payload: JsonObject = Field(default_factory=dict)
    workflow: Workflow

    @property
    def is_self_report(self) -> bool:
        """Nightly and periodic runs report without a prior dispatch (SPEC §5 step 5)."""
        return (self.event_type or "") in SELF_REPORT_EVENT_TYPES


def parse_callback(raw: bytes) -> tuple[CallbackBody, dict[str, Any]]:
    """Parse and check a raw body; return the model and the JSON object as received.

    The JSON object is kept as received because it is forwarded to the HUD verbatim as
    the untrusted self-report.
    """
    if len(raw) > MAX_BODY_BYTES:
        raise CallbackRejected(413, f"body: larger than {MAX_BODY_BYTES} bytes")
    document = _json_document(raw)
    if not isinstance(document, dict):
        raise CallbackRejected(400, "body: must be a JSON object")
    try:
        body = CallbackBody.model_validate(document)
    except ValidationError as exc:
        raise CallbackRejected(400, describe_first_error(exc)) from None
    if body.workflow.status is ReportedStatus.COMPLETED and not body.workflow.conclusion:
        raise CallbackRejected(400, "workflow.conclusion: required when status is completed")
    return body, document


def _json_document(raw: bytes) -> Any:
    """The parsed body: orjson (~2.5x faster on a 26 KB callback), else the standard library.

    orjson is stricter (UTF-8 only, 64-bit integers, no NaN), so a body it refuses gets
    the standard parser's verdict: what the relay accepts does not depend on the parser.
    """
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise CallbackRejected(400, "body: not valid JSON") from None


def describe_first_error(exc: ValidationError) -> str:
    """`field.path: problem` for the first error, in words a CI log reader understands."""
    error = exc.errors(include_url=False)[0]
    location = ".".join(str(part) for part in error["loc"]) or "body"
    kind = error["type"]
    if kind == "missing":
        problem = "required"
    elif kind in ("string_type", "str_type"):
        problem = "must be a string"
    elif kind == "literal_error" or kind == "enum":
        expected = error.get("ctx", {}).get("expected", "")
        problem = f"must be one of {expected}" if expected else "unexpected value"
    elif kind in ("model_type", "model_attributes_type", "dict_type"):
        problem = "must be an object"
    elif kind == "string_too_short":
        problem = "must not be empty"
    else:
        problem = (
            str(error["msg"]).removeprefix("Value error, ").replace("Input should be", "must be")
        )
    return f"{location}: {problem}"

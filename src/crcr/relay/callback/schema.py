"""The callback body of SPEC §5 (schema version 1), checked field by field.

Errors name the field (`workflow.run_id: required`) because the message ends up in a
downstream CI log, read by someone who did not write the relay.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Any

import msgspec
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from crcr.failure_detail.triage_verdict import nested_deeper_than
from crcr.failure_detail.visible_text import has_format_characters, visible
from crcr.failure_detail.workflow import sanitise_failure_detail
from crcr.hud.write.fields import conclusion_problem, run_attempt_number, utc_timestamp
from crcr.relay.jobs.lifecycle import ReportedStatus
from crcr.stores.keys import RawJson
from crcr.web.json_body import InvalidJson, load_json
from crcr.web.refusal import Invalid, TooLarge
from crcr.web.web_urls import web_url_problem

MAX_BODY_BYTES = 1024 * 1024
# Caps on what a job record keeps of a callback (the HUD's own column limits): with
# unknown keys dropped, the stored part of a callback is at most ~5.5 KB of JSON.
MAX_ID_CHARS = 40  # run ids (GitHub's digits, Buildkite's UUIDs), check-run ids
MAX_NAME_CHARS = 300  # workflow and job names
MAX_DELIVERY_CHARS = 200
MAX_COUNT = 1_000_000_000  # test counts: no suite comes near; bounds a number's digits
MAX_WORD_CHARS = 40  # event type, conclusion, schema version, timestamps
SELF_REPORT_EVENT_TYPES = frozenset({"nightly", "periodic"})
MAX_DEPTH = 512
"""Nesting a callback body may have: the relay writes the body out again (to the HUD, to
a job record), and past ~990 levels the standard library's encoder overflows the stack
(a 500); GitHub's payloads are a few levels deep."""


LONE_SURROGATES = "must not contain lone surrogates"


def _shown_text(value: str) -> str:
    """`value` without invisible format characters; lone surrogates are refused.

    Both end up in the job key and on the HUD: the key is encoded as UTF-8, which a lone
    surrogate cannot be, and a bidi override would make a name read as another.
    """
    if not value.isascii() and any("\ud800" <= c <= "\udfff" for c in value):
        raise ValueError(LONE_SURROGATES)
    return visible(value)


def _string_or_integer(value: Any) -> Any:
    """Accept run ids as strings or ints: Buildkite's are UUID strings, GitHub's numbers."""
    if isinstance(value, bool):
        raise ValueError("must be a string or an integer")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        if not value.strip():
            raise ValueError("must not be empty")
        return _shown_text(value).strip()
    raise ValueError("must be a string or an integer")


def _optional_string_or_integer(value: Any) -> Any:
    if value is None or value == "":
        return None
    return _string_or_integer(value)


# Not empty (the document says so too: `run_id: ""` was schema-valid, then refused).
RunIdentifier = Annotated[
    str,
    BeforeValidator(_string_or_integer),
    Field(min_length=1, max_length=MAX_ID_CHARS),
]
# The length bound sits on the string alone: on the union it would be applied to None too.
OptionalIdentifier = Annotated[
    Annotated[str, Field(max_length=MAX_ID_CHARS)] | None,
    BeforeValidator(_optional_string_or_integer),
]
# Shown on the HUD: invisible format characters (bidi overrides, zero-width) are dropped.
Name = Annotated[str, AfterValidator(_shown_text), Field(max_length=MAX_NAME_CHARS)]
Word = Annotated[str, Field(max_length=MAX_WORD_CHARS)]


class FailedTest(BaseModel):
    """One failed test, as bounded by `crcr.failure_detail` (SPEC §11)."""

    name: str
    file: str | None = None
    message: str | None = None


class TestCounts(BaseModel):
    """Optional test counts, and the failed tests' names when the downstream gives them."""

    # Unknown keys are dropped, here and below: what is kept goes into a job record
    # that lives for days, and a downstream must not choose its size.
    model_config = ConfigDict(extra="ignore")

    passed: int = Field(default=0, ge=0, le=MAX_COUNT)
    failed: int = Field(default=0, ge=0, le=MAX_COUNT)
    skipped: int = Field(default=0, ge=0, le=MAX_COUNT)
    failed_tests: list[FailedTest] | None = None
    failed_tests_dropped: int | None = Field(default=None, ge=0)


class Workflow(BaseModel):
    """The `workflow` object the reporter adds to the echoed client payload."""

    model_config = ConfigDict(extra="ignore")

    schema_version: OptionalIdentifier = "1"
    status: ReportedStatus
    conclusion: Word | None = None
    name: Annotated[Name, Field(min_length=1)]
    url: str | None = None
    run_id: RunIdentifier
    run_attempt: RunIdentifier = "1"
    job_name: Name = ""
    check_run_id: OptionalIdentifier = None
    started_at: Word | None = None
    completed_at: Word | None = None
    test_results: TestCounts | None = None
    artifact_url: str | None = None
    triage_verdict: dict[str, Any] | None = None
    expected_conclusion: Word | None = None  # SPEC §13: beats the job name's xfail/…
    failure_detail_problems: list[str] = Field(default_factory=list, exclude=True)
    """Why failure detail was dropped, for the log: set here, never taken from the body."""

    @model_validator(mode="before")
    @classmethod
    def _bound_failure_detail(cls, data: Any) -> Any:
        """Bound failed tests and sanitise the triage verdict before anything reads them.

        Advisory detail never refuses a callback: what is malformed is dropped and said
        why in `failure_detail_problems`, so the job's result still reaches the HUD.
        """
        if not isinstance(data, dict):
            return data
        sanitised, problems = sanitise_failure_detail(data)
        sanitised["failure_detail_problems"] = problems
        return sanitised

    # The HUD's own rules (`hud.write.fields`): what is accepted here, the HUD stores.
    @field_validator("conclusion", "expected_conclusion")
    @classmethod
    def _check_run_conclusion(cls, value: str | None) -> str | None:
        if value and (problem := conclusion_problem(value)):
            raise ValueError(problem)
        return value

    @field_validator("run_attempt")
    @classmethod
    def _positive_attempt(cls, value: str) -> str:
        run_attempt_number(value)
        return value

    @field_validator("started_at", "completed_at")
    @classmethod
    def _iso_time(cls, value: str | None) -> str | None:
        if value:
            utc_timestamp(value)
        return value

    @field_validator("url", "artifact_url")
    @classmethod
    def _plain_web_url(cls, value: str | None, info: ValidationInfo) -> str | None:
        # Shown as links on the HUD and in check runs: `javascript:` must never get in.
        if not value:
            return None
        if has_format_characters(value):
            # Invisible, they make a link read as another; it is refused, not cleaned.
            raise ValueError("must not contain invisible format characters")
        allow_http = bool((info.context or {}).get("allow_http"))
        problem = web_url_problem(value, allow_http=allow_http)
        if problem is not None:
            raise ValueError(problem)
        return value


class EchoedHead(BaseModel):
    """`payload.pull_request.head`: only the SHA is read."""

    sha: Any = None


class EchoedPullRequest(BaseModel):
    """`payload.pull_request`: only what binding compares with the dispatch record."""

    number: Any = None
    head: EchoedHead | None = None


class EchoedPayload(BaseModel):
    """The echoed webhook payload (20-40 KB), of which binding reads three values.

    Everything else in it is skipped while parsing rather than built into Python
    objects: building and freeing them was ~55 % of the CPU of reading a callback.
    Values are left untyped so that binding, not the schema, judges them.
    """

    pull_request: EchoedPullRequest | None = None
    after: Any = None


class CallbackBody(BaseModel):
    """A callback body: the dispatch's client payload echoed back, plus `workflow`."""

    model_config = ConfigDict(extra="ignore")

    event_type: Word | None = None
    delivery_id: Annotated[str, Field(min_length=1, max_length=MAX_DELIVERY_CHARS)]
    payload: EchoedPayload = Field(default_factory=EchoedPayload)
    workflow: Workflow

    @property
    def is_self_report(self) -> bool:
        """Nightly and periodic runs report without a prior dispatch (SPEC §5 step 5)."""
        return (self.event_type or "") in SELF_REPORT_EVENT_TYPES


@dataclass(frozen=True)
class ParsedCallback:
    """A checked callback body and the bytes it came from."""

    body: CallbackBody
    raw: bytes

    @cached_property
    def without_payload(self) -> dict[str, Any]:
        """The body minus the echoed payload, as checked: what the relay keeps and its HUD reads.

        Made once: an `in_progress` callback both stores it and forwards it. Shared, so
        not to be changed by either.
        """
        return self.body.model_dump(mode="json", exclude={"payload"}, exclude_unset=True)

    def as_received(self) -> dict[str, Any]:
        """The whole body as sent, echoed payload included (for a HUD reached over HTTP).

        The run link is the checked one (`with_run_url`), not the one sent. Every value
        but `workflow` is kept as its text (`RawJson`), written out again as it came.
        """
        return self.with_checked_workflow(_top_level_as_text(self.raw))

    def with_checked_workflow(self, document: dict[str, Any]) -> dict[str, Any]:
        """`document` (this body, parsed) with its `workflow` as the relay checked it."""
        if isinstance(document.get("workflow"), dict):
            # Forwarded as sanitised as the relay's own copy: a HUD is never handed
            # an unbounded list or a verdict the relay dropped.
            workflow = document["workflow"] = sanitise_failure_detail(document["workflow"])[0]
            workflow["url"] = self.body.workflow.url
            for name in ("name", "job_name"):  # as checked: without format characters
                if name in workflow:
                    workflow[name] = getattr(self.body.workflow, name)
        return document

    def with_run_url(self, url: str | None) -> ParsedCallback:
        """The same callback, its run link replaced (pinned to the verified repository)."""
        workflow = self.body.workflow.model_copy(update={"url": url})
        return ParsedCallback(self.body.model_copy(update={"workflow": workflow}), self.raw)


def parse_callback(raw: bytes, *, allow_http: bool = False) -> ParsedCallback:
    """Parse and check a raw body straight from its bytes.

    `allow_http` admits `http://` links (the sandbox); otherwise only `https://`.
    """
    if len(raw) > MAX_BODY_BYTES:
        raise TooLarge(f"body: larger than {MAX_BODY_BYTES} bytes")
    context = {"allow_http": allow_http}
    try:
        body = CallbackBody.model_validate_json(raw, context=context)
    except ValidationError as exc:
        if exc.errors()[0]["type"] != "json_invalid":
            raise Invalid(describe_first_error(exc)) from None
        # What pydantic's parser refuses but the standard one reads (NaN, lone
        # surrogates) is judged as before: acceptance does not depend on the parser.
        body = _validated(_json_document(raw), context)
    if body.workflow.status is ReportedStatus.COMPLETED and not body.workflow.conclusion:
        raise Invalid("workflow.conclusion: required when status is completed")
    return ParsedCallback(body, raw)


def _validated(document: Any, context: dict[str, Any]) -> CallbackBody:
    if nested_deeper_than(document, MAX_DEPTH):
        raise Invalid(f"body: nested deeper than {MAX_DEPTH} levels")
    try:
        return CallbackBody.model_validate(document, context=context)
    except ValidationError as exc:
        raise Invalid(describe_first_error(exc)) from None


_TOP_LEVEL = msgspec.json.Decoder(dict[str, msgspec.Raw])
"""A body's top-level values as their undecoded JSON text (`msgspec.Raw`): neither
pydantic nor orjson can leave a value unparsed, and re-parsing the echoed payload for
an HTTP HUD cost as much as checking the callback."""


def _top_level_as_text(raw: bytes) -> dict[str, Any]:
    """The body's top level, `workflow` parsed and every other value kept as its text.

    What msgspec's reader refuses (lone surrogates, NaN, deep nesting), the standard
    parse reads as before (`_json_document`).
    """
    try:
        top = _TOP_LEVEL.decode(raw)
    except (msgspec.MsgspecError, RecursionError):
        document: dict[str, Any] = _json_document(raw)
        return document
    return {
        name: _json_document(memoryview(value)) if name == "workflow" else RawJson(bytes(value))
        for name, value in top.items()
    }


def _json_document(raw: bytes | memoryview) -> Any:
    """The parsed body (`json_body.load_json`), its problem a 400 naming the body."""
    try:
        return load_json(raw)
    except InvalidJson as exc:
        raise Invalid(f"body: {exc}") from None


def describe_first_error(exc: ValidationError) -> str:
    """`field.path: problem` for the first error, in words a CI log reader understands."""
    error = exc.errors(include_url=False)[0]
    location = ".".join(str(part) for part in error["loc"]) or "body"
    kind = error["type"]
    if location == "body" and kind in ("model_type", "model_attributes_type"):
        return "body: must be a JSON object"
    if kind == "missing":
        problem = "required"
    elif kind in ("string_type", "str_type"):
        problem = "must be a string"
    elif kind == "string_unicode":
        problem = LONE_SURROGATES
    elif kind == "literal_error" or kind == "enum":
        expected = error.get("ctx", {}).get("expected", "")
        problem = f"must be one of {expected}" if expected else "unexpected value"
    elif kind in ("model_type", "model_attributes_type", "dict_type"):
        problem = "must be an object"
    elif kind == "string_too_short":
        problem = "must not be empty"
    elif kind in ("string_too_long", "too_long"):
        problem = f"must be at most {error.get('ctx', {}).get('max_length')} characters"
    else:
        problem = (
            str(error["msg"]).removeprefix("Value error, ").replace("Input should be", "must be")
        )
    return f"{location}: {problem}"

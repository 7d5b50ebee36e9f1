"""Bind a callback to the dispatch the relay sent (SPEC §5 step 6), pure.

The reference trusts the echoed payload, which lets an L4 repo put a blocking check on
any commit. Here the dispatch record is the truth: the echo must agree with it, and
everything downstream of this check uses the record, never the echo.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crcr.relay.callback.schema import CallbackBody
from crcr.relay.jobs.dispatch import DispatchRecord
from crcr.web.refusal import Invalid

PUSH_SHAPED = frozenset({"push", "crcr_bisect", "crcr_aa"})
"""Dispatches whose payload is a push: the echo's `after` must be the commit sent."""


def bind_to_dispatch(raw_record: Mapping[str, Any] | None, body: CallbackBody) -> DispatchRecord:
    """Return the dispatch record the callback belongs to, or raise `Invalid` (400)."""
    if raw_record is None:
        raise Invalid("delivery_id: no dispatch to this repository for this delivery")
    record = DispatchRecord.from_store(raw_record)
    if not record.accepts_callbacks:
        raise Invalid(
            "delivery_id: the dispatch for this delivery failed; no callbacks are accepted"
        )
    check_echo(record, body)
    return record


def check_echo(record: DispatchRecord, body: CallbackBody) -> None:
    """Refuse an echoed payload whose event, head SHA or PR number differs from the record."""
    context = record.context
    if body.event_type is not None and body.event_type != context.event_type:
        raise Invalid("event_type: does not match the dispatch")
    payload = body.payload
    if context.event_type == "pull_request":
        pull_request = payload.pull_request
        if pull_request is None:
            raise Invalid("payload.pull_request: required for a pull_request dispatch")
        echoed_sha = pull_request.head.sha if pull_request.head is not None else None
        _same_sha("payload.pull_request.head.sha", echoed_sha, context.head_sha)
        if not _same_number(pull_request.number, context.pr_number):
            raise Invalid("payload.pull_request.number: does not match the dispatch")
    elif context.event_type in PUSH_SHAPED:
        _same_sha("payload.after", payload.after, context.head_sha)


def _same_sha(field: str, echoed: object, recorded: str) -> None:
    if not isinstance(echoed, str) or echoed.lower() != recorded.lower():
        raise Invalid(f"{field}: does not match the dispatch")


def _same_number(echoed: object, recorded: int | None) -> bool:
    if recorded is None or isinstance(echoed, bool):
        return False
    if isinstance(echoed, int):
        return echoed == recorded
    return isinstance(echoed, str) and echoed.strip() == str(recorded)

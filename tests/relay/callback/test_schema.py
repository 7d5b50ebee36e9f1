"""The callback body's optional identifiers: null means unset, and their bound still holds."""

from __future__ import annotations

import json
from typing import Any

import pytest

from crcr.relay.callback.schema import parse_callback
from crcr.web.refusal import Invalid


def _body(**workflow: Any) -> bytes:
    base = {"schema_version": "1", "status": "in_progress", "name": "ci", "run_id": "7"}
    document = {"event_type": "pull_request", "delivery_id": "d-1", "payload": {}}
    return json.dumps({**document, "workflow": {**base, **workflow}}).encode()


@pytest.mark.parametrize("unset", [None, ""])
def test_a_null_or_empty_check_run_id_is_unset(unset: str | None) -> None:
    assert parse_callback(_body(check_run_id=unset)).body.workflow.check_run_id is None


def test_a_numeric_check_run_id_is_kept_as_text() -> None:
    assert parse_callback(_body(check_run_id=456)).body.workflow.check_run_id == "456"


def test_an_overlong_check_run_id_is_refused_naming_the_field() -> None:
    with pytest.raises(Invalid, match=r"^workflow\.check_run_id: must be at most"):
        parse_callback(_body(check_run_id="9" * 500))


# The HUD's rules (`crcr.hud.write.fields`), checked where the value was sent: a callback
# the relay accepts is one the HUD stores.
@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("conclusion", "Success", "is not a check-run conclusion"),
        ("conclusion", "x" * 31, "is not a check-run conclusion"),
        ("run_attempt", "first", "must be a positive integer"),
        ("run_attempt", 0, "must be a positive integer"),
        ("run_attempt", "²", "must be a positive integer"),
        ("started_at", "yesterday", "is not an ISO-8601 timestamp"),
        ("completed_at", "2026-13-01T00:00:00Z", "is not an ISO-8601 timestamp"),
    ],
)
def test_a_value_the_hud_would_refuse_is_refused_naming_the_field(
    field: str, value: Any, problem: str
) -> None:
    with pytest.raises(Invalid, match=rf"^workflow\.{field}: {problem}"):
        parse_callback(_body(**{field: value}))


def test_what_the_hud_takes_is_taken() -> None:
    workflow = parse_callback(
        _body(conclusion="timed_out", run_attempt=2, started_at="2026-01-01T00:00:00+02:00")
    ).body.workflow
    assert (workflow.conclusion, workflow.run_attempt) == ("timed_out", "2")

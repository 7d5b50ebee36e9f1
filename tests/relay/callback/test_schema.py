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

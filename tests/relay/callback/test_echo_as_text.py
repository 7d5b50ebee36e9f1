"""The echoed payload forwarded to an HTTP HUD as its text equals the one parsed and
encoded again (issue 34: the re-parse cost as much as checking the callback).

`ParsedCallback.as_received` keeps every top-level value but `workflow` as `RawJson`;
what reaches the HUD must read as what the full parse (`load_json`, then the same
workflow checks) gave, whatever the downstream echoed: extra keys, unicode, numbers
past 64 bits, nesting, and what msgspec's reader refuses (then parsed as before).
"""

from __future__ import annotations

import json
from typing import Any

import orjson
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from crcr.relay.callback.schema import parse_callback
from crcr.stores.keys import RawJson, _raw_fragment, decode, encode, encode_bytes
from crcr.web.json_body import load_json

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


def _raw(payload: Any, extra: dict[str, Any], workflow_extra: dict[str, Any]) -> bytes:
    workflow = {
        "status": "completed",
        "conclusion": "failure",
        "name": "ci\u200b",  # a format character: the checked name drops it
        "run_id": 7,
        "url": "https://example.com/run",
        "test_results": {"failed": 1, "failed_tests": [{"name": "t", "message": "m"}]},
        **workflow_extra,
    }
    document = {**extra, "delivery_id": "d-1", "payload": payload, "workflow": workflow}
    return json.dumps(document, ensure_ascii=False).encode()


def _as_sent(document: dict[str, Any]) -> Any:
    """What a HUD reads from the relay's POST body."""
    return decode(encode_bytes({"untrusted": {"callback_payload": document}}))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    payload=st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=5),
    extra=st.dictionaries(st.sampled_from(["event_type_x", "client", "é", "n"]), JSON_VALUES),
    workflow_extra=st.dictionaries(st.sampled_from(["unknown", "job_name"]), st.text(max_size=5)),
)
@example(payload={"pull_request": {"number": 2**80}}, extra={}, workflow_extra={})
@example(payload={"x": [[[[]]]], "after": "é"}, extra={"n": 1.5e300}, workflow_extra={})
def test_the_payload_as_text_reads_as_the_payload_parsed(
    payload: dict[str, Any], extra: dict[str, Any], workflow_extra: dict[str, Any]
) -> None:
    raw = _raw(payload, extra, workflow_extra)
    callback = parse_callback(raw)
    as_text = callback.as_received()
    parsed = callback.with_checked_workflow(load_json(raw))

    assert isinstance(as_text["payload"], RawJson)
    assert _as_sent(as_text) == _as_sent(parsed)
    if all(isinstance(v, RawJson) for k, v in as_text.items() if k != "workflow"):
        # Written by orjson as it came (json.dumps's ", " kept), not parsed again.
        sent = orjson.dumps(as_text["payload"], default=_raw_fragment)
        assert sent == json.dumps(payload, ensure_ascii=False).encode()
    assert decode(encode(as_text)) == decode(encode(parsed))


def test_what_msgspec_refuses_is_parsed_as_before() -> None:
    """A lone surrogate (which `load_json`'s fallback reads) leaves the fast path."""
    raw = _raw({"title": "x"}, {}, {}).replace(b'"x"', b'"\\ud800"')
    callback = parse_callback(raw)

    assert callback.as_received() == callback.with_checked_workflow(load_json(raw))


def test_a_document_with_raw_values_is_written_by_orjson() -> None:
    """The fast path is taken: the raw text appears verbatim (its spaces kept)."""
    document = {"payload": RawJson(b'{"a": [1, 2]}'), "workflow": {"b": 1}}

    assert encode_bytes(document) == b'{"payload":{"a": [1, 2]},"workflow":{"b":1}}'
    assert encode(document) == '{"payload":{"a": [1, 2]},"workflow":{"b":1}}'


def test_a_raw_value_falls_back_with_the_rest_when_orjson_refuses_the_document() -> None:
    """`encode` falls back to the standard library (an integer past 64 bits outside the
    raw text); a `RawJson` in it is written as the value its text holds."""
    document = {"big": 2**70, "payload": RawJson(b'{"a": [1, "\\u00e9"]}')}

    assert decode(encode(document)) == {"big": 2**70, "payload": {"a": [1, "é"]}}
    assert decode(encode_bytes(document)) == {"big": 2**70, "payload": {"a": [1, "é"]}}

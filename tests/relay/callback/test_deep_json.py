"""Deeply nested callback bodies are answered 400 naming the problem, never 500."""

from __future__ import annotations

import json

import pytest
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import Relay, callback_body

from crcr.relay.callback.schema import MAX_DEPTH

opener, signing_key, issuer, relay = (
    harness.opener,
    harness.signing_key,
    harness.issuer,
    harness.relay,
)


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("where", ["payload", "extra", "workflow"])
@pytest.mark.parametrize("depth", [300, 1_000, 1_020, 2_000, 100_000])
async def test_a_deeply_nested_body_is_a_bad_request_or_harmless(
    relay: Relay, where: str, depth: int
) -> None:
    await relay.dispatch("d-1")
    body = callback_body("d-1")
    text = json.dumps(body)
    marker = {"payload": '"payload": {', "extra": '"event_type"', "workflow": '"status"'}[where]
    raw = text.replace(marker, f'"deep": {nested(depth)}, {marker}', 1).encode()

    response = await relay.post(raw)

    if depth > MAX_DEPTH:
        assert response.status_code == 400
        assert response.json()["detail"].startswith("body: nested deeper than ")
        assert relay.hud.writes == 0
    else:
        assert response.status_code == 200, response.text


@pytest.mark.parametrize("depth", [400, 990, 1_000, 1_020])
async def test_a_deeply_nested_triage_verdict_is_dropped_or_refused_never_a_500(
    relay: Relay, depth: int
) -> None:
    # Issue 33 item 14: inside orjson's 1,024 levels but past Python's recursion limit,
    # the verdict's size check overflowed the stack and the callback answered 500.
    await relay.dispatch("d-1")
    body = callback_body("d-1")
    text = json.dumps(body)
    verdict = '{"schema_version": 1, "category": "flake", "confidence": "low", "summary": "s", '
    deep = f'"triage_verdict": {verdict}"deep": {nested(depth - 4)}}}, '
    raw = text.replace('"status"', f'{deep}"status"', 1).encode()

    response = await relay.post(raw)

    if depth > MAX_DEPTH:
        assert response.status_code == 400, response.text
        assert response.json()["detail"] == f"body: nested deeper than {MAX_DEPTH} levels"
        assert relay.hud.writes == 0
    else:
        assert response.json() == {"status": "accepted"}
        assert relay.hud.only_row()["triage_verdict"] is None

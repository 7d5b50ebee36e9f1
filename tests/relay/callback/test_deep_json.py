"""Deeply nested callback bodies are answered 400 naming the problem, never 500."""

from __future__ import annotations

import json

import pytest
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import Relay, callback_body

opener, signing_key, issuer, relay = (
    harness.opener,
    harness.signing_key,
    harness.issuer,
    harness.relay,
)


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("where", ["payload", "extra", "workflow"])
@pytest.mark.parametrize("depth", [300, 2_000, 100_000])
async def test_a_deeply_nested_body_is_a_bad_request_or_harmless(
    relay: Relay, where: str, depth: int
) -> None:
    await relay.dispatch("d-1")
    body = callback_body("d-1")
    text = json.dumps(body)
    marker = {"payload": '"payload": {', "extra": '"event_type"', "workflow": '"status"'}[where]
    raw = text.replace(marker, f'"deep": {nested(depth)}, {marker}', 1).encode()

    response = await relay.post(raw)

    if depth > 1024:
        assert response.status_code == 400
        assert response.json()["detail"] == "body: nested deeper than 1024 levels"
        assert relay.hud.writes == 0
    else:
        assert response.status_code == 200, response.text

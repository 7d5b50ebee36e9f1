"""Alerts as values (SPEC §13): which changes raise one, the body, the signature."""

from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime

import pytest

from crcr.relay.alerts.alert import BACKEND_STATE, CANARY, encode, signature, transition

AT = datetime(2026, 11, 27, 12, tzinfo=UTC)


@pytest.mark.parametrize(
    ("kind", "before", "after", "raised"),
    [
        (BACKEND_STATE, None, "failing", False),  # never judged before
        (BACKEND_STATE, "no_data", "failing", False),  # a first state
        (BACKEND_STATE, "failing", "failing", False),  # another failure, no change
        (BACKEND_STATE, "passing", "failing", True),
        (BACKEND_STATE, "failing", "passing", True),
        (BACKEND_STATE, "passing", "flaky", True),
        (BACKEND_STATE, "passing", "stale", True),
        (BACKEND_STATE, "passing", "no_data", False),
        (CANARY, "healthy", "degraded", True),
        (CANARY, "degraded", "healthy", True),
        (CANARY, "no_data", "degraded", False),
    ],
)
def test_only_a_change_between_known_states_raises(
    kind: str, before: str | None, after: str, raised: bool
) -> None:
    alert = transition(kind, "org/b", before, after, AT, None)
    assert (alert is not None) is raised


def test_the_body_has_the_spec_keys_and_a_github_style_signature() -> None:
    alert = transition(BACKEND_STATE, "org/b", "passing", "failing", AT, "https://hud/crcr/org/b")
    assert alert is not None
    body = alert.as_json()
    assert body == {
        "kind": "backend_state",
        "repo": "org/b",
        "from": "passing",
        "to": "failing",
        "at": "2026-11-27T12:00:00Z",
        "url": "https://hud/crcr/org/b",
    }
    content = encode(body)
    digest = hmac.new(b"k", content, hashlib.sha256).hexdigest()
    assert signature(b"k", content) == f"sha256={digest}"
    assert signature(b"other", content) != signature(b"k", content)

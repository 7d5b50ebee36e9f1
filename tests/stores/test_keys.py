"""Key composition and encoding shared by both stores."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from crcr.stores.keys import (
    _ESCAPES,
    compose,
    key_part,
    merged,
    ttl_milliseconds,
    unescape_part,
)


@pytest.mark.parametrize("part", ["plain", "a:b", "{tag}", "100%", "%3A", ""])
def test_an_escaped_part_round_trips_and_holds_no_separator(part: str) -> None:
    escaped = key_part(part)
    assert ":" not in escaped and "{" not in escaped and "}" not in escaped
    assert unescape_part(escaped) == part


@given(st.one_of(st.text(), st.text(alphabet="%:{}a3A7BD5", max_size=30)))
@example("%3A:{%7B}")
@example("100%")
def test_escaping_by_replaces_is_the_translation(part: str) -> None:
    """`key_part`'s replaces give what the escape table's translation gives."""
    assert key_part(part) == part.translate(_ESCAPES)
    assert unescape_part(key_part(part)) == part


def test_composed_keys_cannot_collide() -> None:
    assert compose("a:b", "c") != compose("a", "b:c")
    assert compose("a", "b") == "a:b"


def test_ttls_become_whole_milliseconds_and_must_be_positive() -> None:
    assert ttl_milliseconds(1) == 1000
    assert ttl_milliseconds(0.0001) == 1
    with pytest.raises(ValueError, match="ttl must be positive"):
        ttl_milliseconds(0)


def test_merge_replaces_top_level_keys_only() -> None:
    assert merged({"a": 1, "b": {"x": 1}}, {"b": {"y": 2}}) == {"a": 1, "b": {"y": 2}}

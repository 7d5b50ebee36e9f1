"""Request bodies as JSON: one verdict whatever the parser, deep nesting a clear refusal."""

from __future__ import annotations

import pytest

from crcr.web.json_body import MAX_DEPTH, InvalidJson, load_json


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 5_000, 200_000])
def test_nesting_beyond_the_limit_is_refused_by_name(depth: int) -> None:
    with pytest.raises(InvalidJson, match=f"nested deeper than {MAX_DEPTH} levels"):
        load_json(nested(depth))


def test_nesting_up_to_the_limit_is_read() -> None:
    assert isinstance(load_json(nested(MAX_DEPTH)), list)


def test_what_only_the_standard_parser_reads_is_still_read() -> None:
    assert load_json(b'{"n": NaN}')["n"] != 0
    assert load_json(b'{"big": 123456789012345678901234567890}')["big"] > 2**64


@pytest.mark.parametrize("raw", [b"", b"{", b"\xff\xfe", b"not json"])
def test_anything_else_is_not_json(raw: bytes) -> None:
    with pytest.raises(InvalidJson, match="not valid JSON"):
        load_json(raw)

"""Parse a request body as JSON, with one verdict whichever parser reads it.

orjson is fast but stricter than the standard library (UTF-8 only, 64-bit integers, no
NaN); a body it refuses gets the standard parser's verdict, so what crcr accepts does
not depend on the parser. Nesting is the exception: orjson stops at 1,024 levels and
the standard parser overflows Python's stack a little later, which surfaced as a 500
and a traceback. Such a body is refused, naming the problem.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import orjson

MAX_DEPTH = 1024
"""orjson's nesting limit; no webhook, callback or results body comes near it."""


class InvalidJson(ValueError):
    """The body is not JSON crcr reads; the message says why (for a 400)."""


def load_json(raw: bytes | bytearray | memoryview, *, max_depth: int = MAX_DEPTH) -> Any:
    """The parsed document, or `InvalidJson`.

    A `max_depth` below `MAX_DEPTH` is for a document that is later written out again
    with the standard library (whose encoder overflows the stack near 1,000 levels).
    """
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if "depth" in str(exc) or "recursion" in str(exc):
            raise InvalidJson(f"nested deeper than {max_depth} levels") from None
        try:
            document = json.loads(bytes(raw))
        except RecursionError:
            raise InvalidJson(f"nested deeper than {max_depth} levels") from None
        except (ValueError, UnicodeDecodeError):
            raise InvalidJson("not valid JSON") from None
    if max_depth < MAX_DEPTH and nested_deeper_than(document, max_depth):
        raise InvalidJson(f"nested deeper than {max_depth} levels")
    return document


def nested_deeper_than(value: object, limit: int) -> bool:
    """Whether `value` holds containers more than `limit` levels deep (without recursing)."""
    level: list[object] = [value]
    for _ in range(limit + 1):
        level = [
            child
            for item in level
            if isinstance(item, Mapping | list)
            for child in (item.values() if isinstance(item, Mapping) else item)
        ]
        if not level:
            return False
    return True

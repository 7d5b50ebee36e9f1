"""Parse a request body as JSON, with one verdict whichever parser reads it.

orjson is fast but stricter than the standard library (UTF-8 only, 64-bit integers, no
NaN); a body it refuses gets the standard parser's verdict, so what crcr accepts does
not depend on the parser. Nesting is the exception: orjson stops at 1,024 levels and
the standard parser overflows Python's stack a little later, which surfaced as a 500
and a traceback. Such a body is refused, naming the problem.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

MAX_DEPTH = 1024
"""orjson's nesting limit; no webhook, callback or results body comes near it."""


class InvalidJson(ValueError):
    """The body is not JSON crcr reads; the message says why (for a 400)."""


def load_json(raw: bytes | bytearray | memoryview) -> Any:
    """The parsed document, or `InvalidJson`."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if "depth" in str(exc) or "recursion" in str(exc):
            raise InvalidJson(f"nested deeper than {MAX_DEPTH} levels") from None
    try:
        return json.loads(bytes(raw))
    except RecursionError:
        raise InvalidJson(f"nested deeper than {MAX_DEPTH} levels") from None
    except (ValueError, UnicodeDecodeError):
        raise InvalidJson("not valid JSON") from None

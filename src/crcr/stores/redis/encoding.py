"""How the Redis store's scripts take values: records as hashes of JSON fields, times in µs/ms."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from crcr.stores.keys import QUEUE_TTL_SECONDS, decode, encode

# Records are hashes of JSON values so that a merge is an HSET of the changed fields,
# with no JSON handling in Lua (cjson rounds numbers to 14 digits).
_DATA = "d:"
_DATA_LEN = len(_DATA)
EXISTS_FIELD = "~"
QUEUE_TTL_MS = QUEUE_TTL_SECONDS * 1000


def microseconds(seconds: float) -> int:
    """Whole microseconds of a duration, never negative."""
    return max(0, round(seconds * 1_000_000))


def data_fields(data: Mapping[str, Any]) -> list[str]:
    """A record's data as the flat field/value list of an HSET."""
    fields: list[str] = []
    append = fields.append
    for name, value in data.items():
        append(_DATA + name)
        append(encode(value))
    return fields


def data_of(fields: Mapping[str, str]) -> dict[str, Any]:
    """The data kept in a record's hash (its other fields, such as `state`, left out).

    Each field read as `decode` reads it (orjson first) without a call per field; a record
    with a field orjson refuses is read again through `decode`, which falls back to the
    standard library.
    """
    try:
        return {k[_DATA_LEN:]: orjson.loads(v) for k, v in fields.items() if k.startswith(_DATA)}
    except orjson.JSONDecodeError:
        return {k[_DATA_LEN:]: decode(v) for k, v in fields.items() if k.startswith(_DATA)}


def as_dict(flat: Sequence[str]) -> dict[str, str]:
    """A flat [field, value, ...] reply (HGETALL inside Lua) as a dict."""
    return dict(zip(flat[::2], flat[1::2], strict=True))


def scored(reply: Sequence[Any]) -> list[tuple[float, str]]:
    """A sorted-set reply read WITHSCORES as (score, member) pairs, in its order.

    The single-server client leaves a raw command's reply flat ([member, score, ...]);
    the Cluster client pairs it up ([[member, score], ...]).
    """
    if reply and isinstance(reply[0], list | tuple):
        return [(float(score), member) for member, score in reply]
    return [(float(score), member) for member, score in zip(reply[::2], reply[1::2], strict=True)]

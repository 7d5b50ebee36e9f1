"""Key naming and value encoding shared by the Redis and SQLite state stores."""

from __future__ import annotations

import json
import math
import urllib.parse
import zlib
from collections.abc import Mapping
from typing import Any

import orjson

DEFAULT_PREFIX = "crcr:"

# Job records and the deadlines of unfinished jobs are spread over this many Cluster
# slots; a job's record and its deadline entry share one, so that one script changes both.
JOB_BUCKETS = 32

# Retry-queue keys must never expire while items wait in them; every write refreshes this.
QUEUE_TTL_SECONDS = 30 * 24 * 3600

_ESCAPES = str.maketrans({"%": "%25", ":": "%3A", "{": "%7B", "}": "%7D"})


def key_part(value: str) -> str:
    """Escape one component so that joined keys stay unambiguous.

    `:` separates components and `{`/`}` delimit Redis Cluster hash tags, so a job name
    containing them can neither collide with another key nor move a key to another slot.
    """
    if "%" in value or ":" in value or "{" in value or "}" in value:
        # Four replaces, `%` first so that no escape is escaped again: what
        # `value.translate(_ESCAPES)` gives, in a tenth of its time (a translate to
        # multi-character strings goes character by character through a dict), and a
        # job key always has its `:`s. `tests/stores/test_keys.py` holds the two equal.
        return value.replace("%", "%25").replace(":", "%3A").replace("{", "%7B").replace("}", "%7D")
    return value  # the usual case, and ten times faster than a translate that finds nothing


def unescape_part(escaped: str) -> str:
    """Undo `key_part` (every `%XX` in an escaped part is one `key_part` produced)."""
    return urllib.parse.unquote(escaped)


def compose(*parts: str) -> str:
    """Join escaped components into one key: `compose("a:b", "c") == "a%3Ab:c"`."""
    return ":".join(map(key_part, parts))  # map: no generator frame per part


def ttl_milliseconds(ttl: float, *, name: str = "ttl") -> int:
    """Convert a TTL in seconds to whole milliseconds, refusing non-positive TTLs."""
    if not ttl > 0:
        raise ValueError(f"{name} must be positive, got {ttl!r}")
    return max(1, math.ceil(ttl * 1000))


class RawJson:
    """A JSON value kept as the text it came in (UTF-8), which `encode` and `encode_bytes`
    write out as it is: a callback's 20-40 KB echoed webhook payload is forwarded to an
    HTTP HUD without being parsed into Python objects and encoded anew.

    Not a dataclass: orjson writes dataclasses as objects itself, without asking `default`.
    """

    __slots__ = ("text",)

    def __init__(self, text: bytes) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"RawJson({self.text[:40]!r}...)"


def _raw_fragment(value: Any) -> orjson.Fragment:
    """orjson's `default`: a `RawJson` written as its text."""
    if isinstance(value, RawJson):
        return orjson.Fragment(value.text)
    raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")


def _raw_parsed(value: Any) -> Any:
    """The standard library's `default`: a `RawJson` as the value its text holds."""
    if isinstance(value, RawJson):
        return json.loads(value.text)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def encode(value: Any) -> str:
    """Serialise a JSON value compactly (records and payloads are stored as JSON text).

    `encode_bytes` spelled out rather than called: a job record's every field goes
    through here on each transition.
    """
    try:
        return orjson.dumps(value, default=_raw_fragment, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=_raw_parsed)


def encode_bytes(value: Any) -> bytes:
    """`encode` as UTF-8 bytes, for a request body.

    orjson does it in a fraction of the time, and the callback path encodes a job
    record's fields on every call; what orjson refuses (integers beyond 64 bits, nesting
    past its 254 levels, which the body parser accepts up to `json_body.MAX_DEPTH`)
    falls back to the standard library, which writes the same JSON.
    """
    try:
        return orjson.dumps(value, default=_raw_fragment, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=_raw_parsed)
        return text.encode()


def decode(text: str | bytes) -> Any:
    """Parse JSON text written by `encode` (or any JSON: token segments use it too)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)  # what orjson refuses (big integers), or the real error


def decode_mapping(text: str) -> dict[str, Any]:
    """Parse JSON text that must hold an object (a record, a payload, a summary)."""
    value = decode(text)
    if not isinstance(value, dict):
        raise ValueError(f"stored value is not a JSON object: {text[:60]!r}")
    return value


def merged(base: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """Shallow-merge `changes` over `base` (top-level keys replace, others stay)."""
    return {**base, **changes}


def job_bucket(job_key: str) -> int:
    """Which of the `JOB_BUCKETS` a job lives in (stable across processes and versions)."""
    return zlib.crc32(job_key.encode()) % JOB_BUCKETS


class RedisKeys:
    """Where each kind of record lives in Redis.

    Every key starts with the prefix and carries a hash tag (`{...}`) chosen so that the
    keys one script touches share a Cluster slot: a queue's keys share `{q:<queue>}`, a
    job's record and the deadlines set it is tracked in share `{jobs:<bucket>}`.
    """

    def __init__(self, prefix: str = DEFAULT_PREFIX) -> None:
        if "{" in prefix or "}" in prefix:
            raise ValueError("prefix must not contain '{' or '}' (they delimit hash tags)")
        self.prefix = prefix
        self._buckets = [f"{prefix}{{jobs:{bucket:02d}}}" for bucket in range(JOB_BUCKETS)]
        """Each bucket's key prefix, formatted once: every job key starts with one."""
        self._queue_sets: dict[tuple[str, tuple[str, ...]], tuple[str, ...]] = {}

    def _tagged(self, *parts: str) -> str:
        return f"{self.prefix}{{{compose(*parts)}}}"

    def claim(self, key: str) -> str:
        return self._tagged("claim", key)

    def dispatch(self, delivery_id: str, repo: str) -> str:
        return self._tagged("dispatch", delivery_id, repo)

    def job(self, job_key: str) -> str:
        return f"{self._bucket(job_bucket(job_key))}:{key_part(job_key)}"

    def beside_deadline(self, kind: str, deadline_key: str) -> str:
        """A record kept in the Cluster slot of `deadline_key`'s deadlines set, so that a
        script may change both (a pull's heads and their recovery deadline, SPEC §15)."""
        return f"{self._bucket(job_bucket(deadline_key))}:{kind}:{key_part(deadline_key)}"

    def _bucket(self, bucket: int) -> str:
        return self._buckets[bucket]

    def listed(self, name: str) -> str:
        """A list of job keys (`transition_job_and_deadline`'s `listed_under`)."""
        return self._tagged("listed", name)

    def rate(self, key: str) -> str:
        return self._tagged("rl", key)

    def cache(self, namespace: str, key: str) -> str:
        return self._tagged("cache", namespace, key)

    def queue(self, queue: str, part: str) -> str:
        return f"{self._tagged('q', queue)}:{part}"

    def queue_set(self, queue: str, parts: tuple[str, ...]) -> tuple[str, ...]:
        """`queue(queue, part)` of each part, built once per queue (a completed Actions
        job's callback enqueues its confirmation)."""
        keys = self._queue_sets.get((queue, parts))
        if keys is None:
            keys = self._queue_sets[queue, parts] = tuple(self.queue(queue, p) for p in parts)
        return keys

    def deadlines(self, bucket: int) -> str:
        """The deadlines of the unfinished jobs of one bucket (`deadlines_of` a job's)."""
        return f"{self._bucket(bucket)}:deadlines"

    def deadlines_of(self, job_key: str) -> str:
        return self.deadlines(job_bucket(job_key))

    def flag(self, name: str, head_sha: str, repo: str) -> str:
        return self._tagged("flag", name, head_sha, repo)

    def summaries(self, head_sha: str, repo: str) -> str:
        return self._tagged("summaries", head_sha, repo)

    def lease_claim(self, name: str, key: str) -> str:
        return self._tagged("lease-claim", name, key)

    def lock(self, name: str) -> str:
        return self._tagged("lock", name)

    def demotions(self) -> str:
        return self._tagged("demotions")

    def bisections(self) -> str:
        return self._tagged("bisections")

    def governance(self, kind: str) -> str:
        return self._tagged("governance", kind)

    def stamp(self, name: str) -> str:
        return self._tagged("stamp", name)

    def audit(self, bucket: str) -> str:
        return self._tagged("audit", bucket)

    def audit_index(self) -> str:
        return self._tagged("audit-index")

    def schema(self) -> str:
        """The layout version of the data under this prefix (`stores.redis.schema`)."""
        return self._tagged("schema")

"""Sanitise a downstream's triage verdict (SPEC §11, the reference's schema v1).

The verdict is advisory and wholly untrusted: whatever tool the downstream runs wrote
it, and the HUD shows it to people reviewing an upstream pull request. So a structural
violation (a wrong type, an unknown enum value or schema version, an unsafe link) drops
the whole verdict — showing part of an object we refused would lend the rest credit it
did not earn — while mere overflow (a long summary, many evidence items) is truncated,
since the excess carries no meaning of its own. Unknown keys are dropped, so a newer
analyzer's additive fields do not cost it its verdict.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from crcr.failure_detail.visible_text import has_format_characters, visible

SCHEMA_VERSION = 1
CATEGORIES = ("upstream", "backend", "infra", "flake", "unknown")
CONFIDENCES = ("high", "medium", "low")
MAX_BYTES = 16 * 1024
MAX_SUMMARY = 1000
MAX_REASON = 300
MAX_EVIDENCE = 10
MAX_SHORT = 200
MAX_EXCERPT = 1000
MAX_URL = 500
ANALYZER_FIELDS = ("name", "version", "model", "prompt_version")
MAX_DEPTH = 32
"""Levels of nesting a verdict may have: schema v1 needs three; the request body may
have 1,024, past the depth at which `json.dumps` overflows Python's stack."""

_COMMIT = re.compile(r"[0-9a-fA-F]{7,40}")


class _Dropped(Exception):
    """A structural violation: the whole verdict goes."""


@dataclass(frozen=True)
class SanitisedVerdict:
    """The verdict to keep (None when there is none or it was dropped) and why it was dropped."""

    verdict: dict[str, Any] | None
    reason: str | None = None


def _text(value: object, field: str, limit: int) -> str:
    """A non-empty string, stripped and truncated; numbers are not coerced (an analyzer bug)."""
    if not isinstance(value, str):
        raise _Dropped(f"{field}: must be a string")
    text = visible(value).strip()
    if not text:
        raise _Dropped(f"{field}: must not be empty")
    return text[:limit]


def _optional_text(value: object, field: str, limit: int) -> str | None:
    """Like `_text`, but absent, null and blank mean "not given"."""
    if value is None or (isinstance(value, str) and not visible(value).strip()):
        return None
    return _text(value, field, limit)


def _choice(value: object, field: str, choices: tuple[str, ...]) -> str:
    text = _text(value, field, MAX_SHORT)
    if text not in choices:
        raise _Dropped(f"{field}: must be one of {', '.join(choices)}")
    return text


def _mapping(value: object, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _Dropped(f"{field}: must be an object")
    return value


def _schema_version(value: object) -> None:
    if isinstance(value, str) and value.strip() == str(SCHEMA_VERSION):
        return
    if isinstance(value, int) and not isinstance(value, bool) and value == SCHEMA_VERSION:
        return
    raise _Dropped(f"schema_version: {value!r} is not supported (expected {SCHEMA_VERSION})")


def is_safe_log_url(url: str) -> bool:
    """Whether `url` may be rendered as a link: plain http(s), a host, nothing smuggled.

    Refused: other schemes (`javascript:`, `data:`), relative paths, userinfo
    (`https://github.com@evil.example` reads as GitHub but goes elsewhere), whitespace
    and control characters (which can end a Markdown link early and start another), and
    URLs over `MAX_URL` characters — truncating a URL would point it somewhere else.
    """
    if (
        len(url) > MAX_URL
        or has_format_characters(url)
        or any(c.isspace() or ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in url)
    ):
        return False
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(host) and "@" not in parts.netloc


def _suspected_upstream(value: object) -> dict[str, Any]:
    raw = _mapping(value, "suspected_upstream")
    result: dict[str, Any] = {}
    pr = raw.get("pr")
    if pr is not None:
        if isinstance(pr, bool) or not isinstance(pr, int) or pr <= 0:
            raise _Dropped("suspected_upstream.pr: must be a positive integer")
        result["pr"] = pr
    commit = raw.get("commit")
    if commit is not None:
        sha = _text(commit, "suspected_upstream.commit", MAX_SHORT)
        if not _COMMIT.fullmatch(sha):
            raise _Dropped("suspected_upstream.commit: must be 7-40 hex characters")
        result["commit"] = sha
    reason = _optional_text(raw.get("reason"), "suspected_upstream.reason", MAX_REASON)
    if reason is not None:
        result["reason"] = reason
    if "pr" not in result and "commit" not in result:
        # A suspicion naming neither cannot be checked against the PR under test.
        raise _Dropped("suspected_upstream: must name a pr or a commit")
    return result


def _evidence_item(value: object, index: int) -> dict[str, str]:
    raw = _mapping(value, f"evidence[{index}]")
    item: dict[str, str] = {}
    for field, limit in (("job", MAX_SHORT), ("test", MAX_SHORT), ("excerpt", MAX_EXCERPT)):
        text = _optional_text(raw.get(field), f"evidence[{index}].{field}", limit)
        if text is not None:
            item[field] = text
    url = raw.get("log_url")
    if url is not None:
        if not isinstance(url, str) or not is_safe_log_url(url):
            raise _Dropped(f"evidence[{index}].log_url: must be a plain http(s) URL")
        item["log_url"] = url
    return item


def _evidence(value: object) -> list[dict[str, str]]:
    if not isinstance(value, list):
        raise _Dropped("evidence: must be a list")
    items = (_evidence_item(raw, index) for index, raw in enumerate(value[:MAX_EVIDENCE]))
    return [item for item in items if item]


def _analyzer(value: object) -> dict[str, str]:
    raw = _mapping(value, "analyzer")
    result: dict[str, str] = {}
    for field in ANALYZER_FIELDS:
        text = _optional_text(raw.get(field), f"analyzer.{field}", MAX_SHORT)
        if text is not None:
            result[field] = text
    return result


def _analyzed_at(value: object) -> str:
    text = _text(value, "analyzed_at", MAX_SHORT)
    # Python < 3.11 (the reporter runs on the runner's python3) reads no trailing `Z`.
    iso = text[:-1] + "+00:00" if text[-1:] in ("Z", "z") else text
    try:
        datetime.fromisoformat(iso)
    except ValueError:
        raise _Dropped("analyzed_at: must be an ISO-8601 timestamp") from None
    return text


def nested_deeper_than(value: object, limit: int) -> bool:
    """Whether `value` holds containers more than `limit` levels deep (without recursing:
    a JSON document nested past Python's recursion limit is the case to catch)."""
    level: list[object] = [value]
    for _ in range(limit + 1):
        level = [
            child
            for item in level
            if isinstance(item, (Mapping, list))
            for child in (item.values() if isinstance(item, Mapping) else item)
        ]
        if not level:
            return False
    return True


def _encoded_size(raw: Mapping[str, Any]) -> int:
    if nested_deeper_than(raw, MAX_DEPTH):
        raise _Dropped(f"nested deeper than {MAX_DEPTH} levels")
    try:
        encoded = json.dumps(raw, separators=(",", ":"), ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        raise _Dropped("not serialisable as JSON") from None
    return len(encoded.encode("utf-8", "surrogatepass"))


def _sanitised(raw: Mapping[str, Any]) -> dict[str, Any]:
    size = _encoded_size(raw)
    if size > MAX_BYTES:
        raise _Dropped(f"{size} bytes, over the {MAX_BYTES}-byte limit")
    _schema_version(raw.get("schema_version"))
    category = _choice(raw.get("category"), "category", CATEGORIES)
    verdict: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "category": category,
        "confidence": _choice(raw.get("confidence"), "confidence", CONFIDENCES),
        "summary": _text(raw.get("summary"), "summary", MAX_SUMMARY),
    }
    if raw.get("suspected_upstream") is not None:
        if category != "upstream":
            raise _Dropped("suspected_upstream: only allowed with category upstream")
        verdict["suspected_upstream"] = _suspected_upstream(raw["suspected_upstream"])
    if raw.get("evidence") is not None and (evidence := _evidence(raw["evidence"])):
        verdict["evidence"] = evidence
    retried = raw.get("reproduced_on_retry")
    if retried is not None:
        if not isinstance(retried, bool):
            raise _Dropped("reproduced_on_retry: must be a boolean")
        verdict["reproduced_on_retry"] = retried
    if raw.get("analyzer") is not None and (analyzer := _analyzer(raw["analyzer"])):
        verdict["analyzer"] = analyzer
    if raw.get("analyzed_at") is not None:
        verdict["analyzed_at"] = _analyzed_at(raw["analyzed_at"])
    return verdict


def sanitise_triage_verdict(raw: object) -> SanitisedVerdict:
    """The verdict as it may be kept and shown, or None with the reason it was dropped.

    No verdict at all is the normal case and comes back without a reason.
    """
    if raw is None:
        return SanitisedVerdict(None)
    try:
        return SanitisedVerdict(_sanitised(_mapping(raw, "triage_verdict")))
    except _Dropped as exc:
        return SanitisedVerdict(None, f"triage_verdict dropped: {exc}")

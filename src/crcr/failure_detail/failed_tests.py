"""Bound the `workflow.test_results.failed_tests` list a downstream reports (SPEC §11)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crcr.failure_detail.visible_text import visible

MAX_ENTRIES = 100
MAX_NAME = 300
MAX_FILE = 300
MAX_MESSAGE = 2000
DROPPED_KEY = "failed_tests_dropped"
"""Key in `test_results` counting the entries not kept, so a reader knows the list is partial."""

_FIELD_LIMITS = (("name", MAX_NAME), ("file", MAX_FILE), ("message", MAX_MESSAGE))


@dataclass(frozen=True)
class BoundedFailedTests:
    """The entries kept, how many were not, and why the whole list was ignored (if it was)."""

    entries: list[dict[str, str]]
    dropped: int
    refused: str | None = None


def _entry(raw: object) -> dict[str, str] | None:
    """One entry with its strings truncated, or None when it is not a usable entry.

    An entry needs a non-empty `name`: a nameless failure cannot be compared with the
    baseline or shown. `file` and `message` are optional; any other key is dropped.
    """
    if not isinstance(raw, Mapping):
        return None
    entry: dict[str, str] = {}
    for field, limit in _FIELD_LIMITS:
        value = raw.get(field)
        if value is None:
            continue
        if not isinstance(value, str):
            return None
        value = visible(value).strip()
        if value:
            entry[field] = value[:limit]
    return entry if "name" in entry else None


def bound_failed_tests(raw: object) -> BoundedFailedTests:
    """Keep at most `MAX_ENTRIES` usable entries with truncated strings; count the rest."""
    if raw is None:
        return BoundedFailedTests([], 0)
    if not isinstance(raw, list):
        return BoundedFailedTests([], 0, "failed_tests must be a list")
    entries: list[dict[str, str]] = []
    for item in raw:
        if len(entries) == MAX_ENTRIES:
            break
        entry = _entry(item)
        if entry is not None:
            entries.append(entry)
    return BoundedFailedTests(entries, len(raw) - len(entries))


def bound_test_results(test_results: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """`test_results` with its `failed_tests` bounded and the dropped count recorded.

    Returns the new mapping and the reason the list was ignored, if it was. A count
    already present is added to, so bounding twice (relay, then HUD) is stable.
    """
    result = dict(test_results)
    if "failed_tests" not in result:
        return result, None
    bounded = bound_failed_tests(result.pop("failed_tests"))
    if bounded.refused is not None:
        return result, bounded.refused
    result["failed_tests"] = bounded.entries
    earlier = result.get(DROPPED_KEY)
    earlier_count = earlier if isinstance(earlier, int) and not isinstance(earlier, bool) else 0
    total = max(0, earlier_count) + bounded.dropped
    if total:
        result[DROPPED_KEY] = total
    else:
        result.pop(DROPPED_KEY, None)
    return result, None

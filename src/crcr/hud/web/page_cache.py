"""Rendered live pages, kept for the store version and the minute they were drawn at.

Every open live page fetches its URL again when the store changes (static/live.js), so
a busy store with many open pages would render the same page once per viewer per poll.
A page depends only on its URL, the store's contents (whose marker is the freshness
version) and, through "rendered at" and the "5m ago" texts, the current minute; so the
HTML for (URL, version, minute) is the same for every viewer and is rendered once. Level
verdicts can change without a write (an allowlist or demotion change): the minute in the
key bounds that staleness to one minute. Per process, least recently used first out.
"""

from __future__ import annotations

from collections import OrderedDict
from datetime import UTC, datetime

PAGES_KEPT = 64


class PageCache:
    """HTML by (URL, store version, UTC minute), at most `size` pages."""

    def __init__(self, size: int = PAGES_KEPT) -> None:
        self._size = size
        self._pages: OrderedDict[tuple[str, str, str], str] = OrderedDict()

    @staticmethod
    def key(url: str, version: str, now: datetime | None = None) -> tuple[str, str, str]:
        minute = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M")
        return url, version, minute

    def get(self, key: tuple[str, str, str]) -> str | None:
        html = self._pages.get(key)
        if html is not None:
            self._pages.move_to_end(key)
        return html

    def put(self, key: tuple[str, str, str], html: str) -> None:
        self._pages[key] = html
        self._pages.move_to_end(key)
        while len(self._pages) > self._size:
            self._pages.popitem(last=False)

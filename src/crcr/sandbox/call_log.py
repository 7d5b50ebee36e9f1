"""The sandbox's record of every GitHub API call it received, for tests to assert on."""

from __future__ import annotations

import asyncio
import fnmatch
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any


def parsed_json(body: bytes) -> Any:
    """The JSON document in `body`; None when it is empty or not JSON."""
    if not body:
        return None
    try:
        return json.loads(body)
    except ValueError:
        return None


@dataclass(frozen=True)
class CallRecord:
    """One request as the sandbox saw it.

    `path` is the API path without any Enterprise-style prefix (`/repos/o/r/dispatches`),
    `status` is None when the call never got an answer (the client gave up first), and
    `faulted` tells whether an injected fault shaped the answer. `headers` are the
    request's headers without `authorization`: credentials stay out of the log.
    `answer` is the parsed JSON the sandbox answered with (None if not JSON), so that
    tests can hold it against GitHub's published schemas. Both documents are kept as
    the bytes on the wire and parsed when first read: a fan-out's 25 KB dispatch bodies
    are then parsed once per call (by the route), not three times.
    """

    method: str
    path: str
    query: str
    repo: str | None
    status: int | None
    body: bytes
    timestamp: float
    faulted: bool = False
    headers: Mapping[str, str] = field(default_factory=dict)
    answer_body: bytes = b""

    @cached_property
    def json(self) -> Any:
        """The request's JSON body (None if empty or not JSON)."""
        return parsed_json(self.body)

    @cached_property
    def answer(self) -> Any:
        """The JSON the sandbox answered with (None if empty or not JSON)."""
        return parsed_json(self.answer_body)

    @property
    def call(self) -> str:
        """The call as GitHub's docs name it: `POST /repos/o/r/dispatches`."""
        return f"{self.method} {self.path}"


def _matches(record: CallRecord, method: str | None, path: str | None, repo: str | None) -> bool:
    if method is not None and record.method != method.upper():
        return False
    if path is not None and not fnmatch.fnmatchcase(record.path, path):
        return False
    return repo is None or (record.repo or "").lower() == repo.lower()


class CallLog:
    """An append-only, thread-safe list of calls (the real server runs in another thread)."""

    def __init__(self) -> None:
        self._records: list[CallRecord] = []
        self._lock = threading.Lock()

    def append(self, record: CallRecord) -> None:
        """Record a finished (or abandoned) call."""
        with self._lock:
            self._records.append(record)

    def calls(
        self, method: str | None = None, path: str | None = None, repo: str | None = None
    ) -> list[CallRecord]:
        """Calls matching every given filter; `path` is a glob such as `/repos/*/dispatches`."""
        with self._lock:
            snapshot = list(self._records)
        return [r for r in snapshot if _matches(r, method, path, repo)]

    def count(self) -> int:
        """How many calls were recorded, without copying the log (a benchmark polls it)."""
        with self._lock:
            return len(self._records)

    def clear(self) -> None:
        """Forget every recorded call."""
        with self._lock:
            self._records.clear()

    async def wait_for(
        self, condition: Callable[[], bool], *, within: float = 5.0, interval: float = 0.005
    ) -> None:
        """Wait until `condition()` holds (e.g. a dispatch arrived); TimeoutError after `within` s.

        Polls rather than using an asyncio primitive because a real server records calls
        from its own thread and event loop.
        """
        deadline = time.monotonic() + within
        while not condition():
            if time.monotonic() >= deadline:
                raise TimeoutError(f"condition not met within {within} s")
            await asyncio.sleep(interval)

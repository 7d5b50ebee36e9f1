"""The audit trail's writer: decisions recorded without slowing the callback (SPEC §12).

The callback path only appends an entry to a bounded in-memory buffer and logs it; a
background task writes what has gathered (for up to `LINGER` seconds) to the state store,
one round trip (Redis) or transaction (SQLite) per batch, shared by every instance. A
store outage is ridden out by retrying the batch; should the buffer fill meanwhile, or
the process stop before it drained, each entry not stored is said in a WARNING log line
with its fields (and counted in `crcr_audit_dropped_total`): never lost silently. Every
decision is also said in one log line (INFO accepted or duplicate, WARNING refused)
carrying the same fields: its request's access log line when the access log is on (one
line per callback, not two), a line of its own otherwise.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
from collections import deque
from collections.abc import Mapping
from typing import Any

from prometheus_client import Counter

from crcr.relay.audit.entries import ACCEPTED, DUPLICATE, CallbackFacts, callback_entry
from crcr.stores.roles import AuditLog
from crcr.stores.state import StateStoreUnavailable
from crcr.web.access_log import carry_on_request_line
from crcr.web.retry_policy import Backoff, retrying

log = logging.getLogger(__name__)

DROPPED = Counter(
    "crcr_audit_dropped",
    "Audit entries not stored (buffer full, or shut down before they were written); "
    "each is in a WARNING log line instead.",
)
WRITE_FAILURES = Counter(
    "crcr_audit_write_failures", "Audit batches the state store refused (retried)."
)

CAPACITY = 10_000
"""Entries buffered at most while the store is slow or away (a few MB)."""
BATCH = 500
LINGER = 1.0
"""Seconds the writer lets entries gather before a write: one transaction (SQLite, with
its fsync) or round trip per second of callbacks, or per `BATCH`. A write's own cost
(transaction, thread hand-off, round trip) is ~1 ms: at 0.1 s, SQLite's ~300 callbacks/s
made batches of ~30 and the write cost ~70 µs per entry. `flush` and `aclose` do not wait
it out."""
RETRY_DELAY = 1.0
CLOSE_BUDGET = 5.0


class AuditTrail:
    """Records audit entries for one instance; `record` never waits for the store."""

    def __init__(
        self,
        store: AuditLog,
        *,
        keep_days: float,
        keep_per_repo: int,
        capacity: int = CAPACITY,
        retry_delay: float = RETRY_DELAY,
        close_budget: float = CLOSE_BUDGET,
        linger: float = LINGER,
    ) -> None:
        self._store = store
        self._keep_seconds = keep_days * 24 * 3600
        self._keep_per_repo = keep_per_repo
        self._capacity = capacity
        # A steady wait, not a growing one: the store is crcr's own, every callback asks
        # it anyway, and a longer wait would only hold the trail back once it is back.
        self._backoff = Backoff(base=retry_delay, factor=1.0)
        self._close_budget = close_budget
        self._linger = linger
        self._pending: deque[dict[str, Any]] = deque()
        self._writer: asyncio.Task[None] | None = None
        self._hurry = asyncio.Event()  # write what is pending without lingering

    def callback_decided(
        self,
        facts: CallbackFacts,
        status_code: int,
        body: dict[str, Any],
        authorization: str | None,
    ) -> None:
        """Log and record the answer given to one callback."""
        entry = callback_entry(facts, status_code, body, authorization)
        decision = entry["decision"]
        level = logging.INFO if decision in (ACCEPTED, DUPLICATE) else logging.WARNING
        words = f"callback {decision}"
        fields = _log_fields(entry)
        if not carry_on_request_line(level, words, fields) and log.isEnabledFor(level):
            log.log(level, words, extra=fields)
        self.record(entry)

    def record(self, entry: dict[str, Any]) -> None:
        """Buffer one entry for the writer; a full buffer says it in the log instead."""
        if len(self._pending) >= self._capacity:
            _dropped([entry], "audit buffer full")
            return
        self._pending.append(entry)
        if self._writer is None:
            self._writer = asyncio.get_running_loop().create_task(self._drain())

    async def flush(self) -> None:
        """Return once everything recorded so far is stored (or said in the log)."""
        while self._writer is not None:
            self._hurry.set()
            await asyncio.shield(self._writer)

    async def aclose(self) -> None:
        """Write what is buffered, within `close_budget` seconds; log whatever could not be."""
        writer = self._writer
        if writer is not None:
            self._hurry.set()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(writer), self._close_budget)
            writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await writer
        if self._pending:
            _dropped(list(self._pending), "shutting down before the audit trail was written")
            self._pending.clear()

    async def _drain(self) -> None:
        # A batch leaves the buffer only once stored: a cancelled or failed write keeps it.
        try:
            while self._pending:
                if len(self._pending) < BATCH and not self._hurry.is_set():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._hurry.wait(), self._linger)
                batch = list(itertools.islice(self._pending, BATCH))
                try:
                    await retrying(
                        functools.partial(
                            self._store.append_audit,
                            batch,
                            keep_seconds=self._keep_seconds,
                            keep_per_repo=self._keep_per_repo,
                        ),
                        backoff=self._backoff,
                        retry_on=StateStoreUnavailable,
                        on_retry=_write_failed,
                    )
                except Exception:
                    log.exception("audit batch refused by the store")
                    _dropped(batch, "audit batch refused by the store")
                for _ in batch:
                    self._pending.popleft()
        finally:
            self._writer = None
            self._hurry.clear()


def _write_failed(failure: Exception, wait: float) -> None:
    WRITE_FAILURES.inc()
    log.warning("audit trail not written yet, retrying in %g s: %s", wait, failure)


_NOT_LOGGED = frozenset({"bucket", "kind", "at"})
"""Storage fields the log line has in other forms (its message, its own time)."""


def _log_fields(entry: Mapping[str, Any]) -> dict[str, Any]:
    """An entry's fields as log extras, under the same names (none is a log record's).

    Each extra field costs the JSON formatter a few µs: absent ones are left out.
    """
    return {k: v for k, v in entry.items() if v is not None and k not in _NOT_LOGGED}


def _dropped(entries: list[dict[str, Any]], why: str) -> None:
    DROPPED.inc(len(entries))
    for entry in entries:
        log.warning("audit entry not stored (%s)", why, extra=_log_fields(entry))

"""Fan one upstream event out to every downstream repo, losing nothing.

For each repo: write the *pending* dispatch record (so a fast callback can bind to it),
send the dispatch with a brief in-request retry, then record `DISPATCHED` — only for
dispatches GitHub accepted. A dispatch that still fails transiently goes to the durable
"dispatch" retry queue; a permanent failure (404: app not installed, 422) is recorded as
failed and reported. Nothing is dropped silently.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from crcr.relay import metrics
from crcr.relay.records import DispatchRecord, DispatchStatus, UpstreamContext
from crcr.relay.sweeper import HandlerResult, QueueHandler
from crcr.stores.state import LeasedItem, StateStore

log = logging.getLogger(__name__)

DISPATCH_QUEUE = "dispatch"

SendDispatch = Callable[[str, str, Mapping[str, Any]], Awaitable[None]]
"""Send one dispatch: (repo, event_type, client_payload); raises on failure."""

IsPermanent = Callable[[Exception], bool]
"""Whether a send failure will never succeed by retrying (404, 422)."""


class Result(StrEnum):
    """What happened to one repo's dispatch."""

    DISPATCHED = "dispatched"
    DUPLICATE = "duplicate"
    QUEUED = "queued"
    FAILED = "failed"


@dataclass(frozen=True)
class DispatchOutcome:
    """One repo's result, as reported in the webhook response."""

    repo: str
    result: Result
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        """The response form: repo, result and (when failed) why."""
        body: dict[str, Any] = {"repo": self.repo, "result": str(self.result)}
        if self.error:
            body["error"] = self.error
        return body


@dataclass(frozen=True)
class FanOut:
    """Everything one fan-out needs besides the event itself."""

    store: StateStore
    send: SendDispatch
    is_permanent: IsPermanent
    record_ttl: int
    concurrency: int


async def dispatch_to_downstreams(
    fanout: FanOut,
    *,
    delivery_id: str,
    context: UpstreamContext,
    client_payload: Mapping[str, Any],
    trimmed: bool,
    repos: Iterable[str],
) -> list[DispatchOutcome]:
    """Dispatch to every repo concurrently, at most `fanout.concurrency` at a time."""
    gate = asyncio.Semaphore(fanout.concurrency)

    async def one(repo: str) -> DispatchOutcome:
        async with gate:
            return await _dispatch_one(fanout, delivery_id, context, client_payload, trimmed, repo)

    return list(await asyncio.gather(*(one(repo) for repo in repos)))


async def _dispatch_one(
    fanout: FanOut,
    delivery_id: str,
    context: UpstreamContext,
    client_payload: Mapping[str, Any],
    trimmed: bool,
    repo: str,
) -> DispatchOutcome:
    record = DispatchRecord(
        delivery_id=delivery_id,
        repo=repo,
        status=DispatchStatus.PENDING,
        context=context,
        sent_at=time.time(),
        trimmed=trimmed,
    )
    if not await _claim(fanout, record):
        return DispatchOutcome(repo, Result.DUPLICATE)
    started = time.perf_counter()
    try:
        await fanout.send(repo, context.event_type, client_payload)
    except Exception as exc:  # any failure is either recorded or queued, never lost
        return await _after_failure(fanout, record, client_payload, exc)
    finally:
        metrics.DISPATCH_SECONDS.observe(time.perf_counter() - started)
    await _mark(fanout, record, DispatchStatus.DISPATCHED)
    metrics.DISPATCHES.labels(outcome="dispatched").inc()
    return DispatchOutcome(repo, Result.DISPATCHED)


async def _claim(fanout: FanOut, record: DispatchRecord) -> bool:
    """Write the pending record; a redelivery only re-sends what finally failed before."""
    if await fanout.store.put_dispatch(
        record.delivery_id, record.repo, record.to_store(), fanout.record_ttl
    ):
        return True
    existing = await fanout.store.get_dispatch(record.delivery_id, record.repo)
    if existing is None or DispatchRecord.from_store(existing).status is DispatchStatus.FAILED:
        await fanout.store.update_dispatch(
            record.delivery_id, record.repo, record.to_store(), fanout.record_ttl
        )
        return True
    return False


async def _after_failure(
    fanout: FanOut,
    record: DispatchRecord,
    client_payload: Mapping[str, Any],
    exc: Exception,
) -> DispatchOutcome:
    reason = str(exc) or type(exc).__name__
    if fanout.is_permanent(exc):
        await _mark(fanout, record, DispatchStatus.FAILED, reason)
        metrics.DISPATCHES.labels(outcome="failed_permanent").inc()
        log.warning(
            "dispatch failed permanently",
            extra={"delivery_id": record.delivery_id, "repo": record.repo, "error": reason},
        )
        return DispatchOutcome(record.repo, Result.FAILED, reason)
    await fanout.store.enqueue(
        DISPATCH_QUEUE,
        f"{record.delivery_id}:{record.repo}",
        {
            "delivery_id": record.delivery_id,
            "repo": record.repo,
            "event_type": record.context.event_type,
            "client_payload": dict(client_payload),
        },
    )
    metrics.DISPATCHES.labels(outcome="queued").inc()
    log.warning(
        "dispatch queued for retry",
        extra={"delivery_id": record.delivery_id, "repo": record.repo, "error": reason},
    )
    return DispatchOutcome(record.repo, Result.QUEUED, reason)


async def _mark(
    fanout: FanOut, record: DispatchRecord, status: DispatchStatus, error: str | None = None
) -> None:
    await fanout.store.update_dispatch(
        record.delivery_id,
        record.repo,
        {"status": str(status), "error": error},
        fanout.record_ttl,
    )


def dispatch_queue_handler(fanout: FanOut) -> QueueHandler:
    """The sweeper's handler for the "dispatch" retry queue."""

    async def handle(item: LeasedItem) -> HandlerResult:
        settled = await redeliver_dispatch(fanout, item.payload)
        return HandlerResult.DONE if settled else HandlerResult.RETRY

    return handle


async def redeliver_dispatch(fanout: FanOut, payload: Mapping[str, Any]) -> bool:
    """Retry one queued dispatch; True when it is settled (sent or failed for good).

    Transient failures return False, so the sweeper releases the item with backoff.
    """
    delivery_id, repo = str(payload["delivery_id"]), str(payload["repo"])
    error: str | None = None
    try:
        await fanout.send(repo, str(payload["event_type"]), payload["client_payload"])
    except Exception as exc:
        if not fanout.is_permanent(exc):
            metrics.DISPATCHES.labels(outcome="retry_failed").inc()
            return False
        status, error, outcome = DispatchStatus.FAILED, str(exc), "failed_permanent"
    else:
        status, outcome = DispatchStatus.DISPATCHED, "redelivered"
    await fanout.store.update_dispatch(
        delivery_id, repo, {"status": str(status), "error": error}, fanout.record_ttl
    )
    metrics.DISPATCHES.labels(outcome=outcome).inc()
    return True

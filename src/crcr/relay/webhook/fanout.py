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
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from crcr.github.client import encode_dispatch
from crcr.relay.audit.entries import dispatch_entry
from crcr.relay.audit.trail import AuditTrail
from crcr.relay.jobs.dispatch import DispatchRecord, DispatchStatus, UpstreamContext
from crcr.relay.jobs.queue_handler import HandlerResult, QueueHandler
from crcr.relay.webhook import metrics
from crcr.stores.roles import Dispatches, RetryQueue
from crcr.stores.state import LeasedItem

log = logging.getLogger(__name__)

DISPATCH_QUEUE = "dispatch"

SendDispatch = Callable[[str, bytes], Awaitable[None]]
"""Send one dispatch: (repo, the encoded request body); raises on failure."""

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


class FanoutStore(Dispatches, RetryQueue, Protocol):
    """The state store as a fan-out sees it: dispatch records, and the redelivery queue."""


@dataclass(frozen=True)
class FanOut:
    """Everything one fan-out needs besides the event itself."""

    store: FanoutStore
    send: SendDispatch
    is_permanent: IsPermanent
    record_ttl: int
    concurrency: int
    audit: AuditTrail | None = None
    """Where each dispatch's outcome is recorded per downstream (SPEC §12, `crcr doctor`)."""
    still_listed: Callable[[str], Awaitable[bool]] | None = None
    """Whether a repo is still allowlisted: a queued dispatch to a removed one is dropped."""


async def dispatch_to_downstreams(
    fanout: FanOut,
    *,
    delivery_id: str,
    context: UpstreamContext,
    client_payload: Mapping[str, Any],
    trimmed: bool,
    repos: Iterable[str],
) -> list[DispatchOutcome]:
    """Dispatch to every repo concurrently, at most `fanout.concurrency` at a time.

    The store is written twice per event, not twice per repo: every pending record in
    one batch before anything is sent, every outcome in one batch after.
    """
    targets = list(repos)
    record = DispatchRecord(
        delivery_id=delivery_id,
        repo="",
        status=DispatchStatus.PENDING,
        context=context,
        sent_at=time.time(),
        trimmed=trimmed,
    )
    # Flattened once and copied per repo: the records differ only in their repo (their
    # nested context is shared, and each store encodes every record it is given).
    pending = record.to_store()
    fresh = {repo: {**pending, "repo": repo} for repo in targets}
    claimed = await fanout.store.put_dispatches(delivery_id, fresh, fanout.record_ttl)
    claimed |= await _reclaim_failed(fanout, delivery_id, fresh, claimed)
    body = encode_dispatch(context.event_type, client_payload)

    async def send(repo: str) -> Exception | None:
        started = time.perf_counter()
        try:
            await fanout.send(repo, body)
        except Exception as exc:  # every failure is recorded or queued below
            return exc
        finally:
            metrics.DISPATCH_SECONDS.observe(time.perf_counter() - started)
        return None

    sending = [repo for repo in targets if repo in claimed]
    limited: Callable[[str], Awaitable[Exception | None]] = send
    if len(sending) > fanout.concurrency:
        limited = _gated(send, asyncio.Semaphore(fanout.concurrency))
    errors = dict(zip(sending, await asyncio.gather(*map(limited, sending)), strict=True))
    outcomes = {repo: DispatchOutcome(repo, Result.DUPLICATE) for repo in targets}
    changes: dict[str, dict[str, Any]] = {}
    for repo, error in errors.items():
        if error is None:
            outcomes[repo] = DispatchOutcome(repo, Result.DISPATCHED)
            changes[repo] = {"status": str(DispatchStatus.DISPATCHED), "error": None}
        elif fanout.is_permanent(error):
            outcomes[repo] = DispatchOutcome(repo, Result.FAILED, _reason(error))
            changes[repo] = {"status": str(DispatchStatus.FAILED), "error": _reason(error)}
        else:
            outcomes[repo] = DispatchOutcome(repo, Result.QUEUED, _reason(error))
            await _queue(fanout, delivery_id, repo, context.event_type, client_payload)
    if changes:
        await fanout.store.update_dispatches(delivery_id, changes, fanout.record_ttl)
    for result, count in Counter(o.result for o in outcomes.values()).items():
        if result is not Result.DUPLICATE:
            metrics.DISPATCHES.labels(outcome=str(result)).inc(count)
    for outcome in outcomes.values():
        if outcome.result is not Result.DUPLICATE:
            _audit(fanout, outcome.repo, delivery_id, _AUDITED[outcome.result], outcome.error)
        if outcome.error:
            log.warning(
                "dispatch %s",
                outcome.result,
                extra={"delivery_id": delivery_id, "repo": outcome.repo, "error": outcome.error},
            )
    return [outcomes[repo] for repo in targets]


def _gated(
    send: Callable[[str], Awaitable[Exception | None]], gate: asyncio.Semaphore
) -> Callable[[str], Awaitable[Exception | None]]:
    """`send`, at most `gate`'s count at a time (only worth its cost past that many)."""

    async def send_gated(repo: str) -> Exception | None:
        async with gate:
            return await send(repo)

    return send_gated


async def _reclaim_failed(
    fanout: FanOut, delivery_id: str, fresh: Mapping[str, Mapping[str, Any]], claimed: set[str]
) -> set[str]:
    """On redelivery, re-send only what finally failed before; the rest is a duplicate."""
    reclaimed = set()
    for repo in fresh.keys() - claimed:
        existing = await fanout.store.get_dispatch(delivery_id, repo)
        if existing is not None and existing.get("status") == str(DispatchStatus.FAILED):
            reclaimed.add(repo)
    if reclaimed:
        await fanout.store.update_dispatches(
            delivery_id, {repo: fresh[repo] for repo in reclaimed}, fanout.record_ttl
        )
    return reclaimed


async def _queue(
    fanout: FanOut,
    delivery_id: str,
    repo: str,
    event_type: str,
    client_payload: Mapping[str, Any],
) -> None:
    """Hand a transiently failed dispatch to the durable retry queue (the sweeper's)."""
    await fanout.store.enqueue(
        DISPATCH_QUEUE,
        f"{delivery_id}:{repo}",
        {
            "delivery_id": delivery_id,
            "repo": repo,
            "event_type": event_type,
            "client_payload": dict(client_payload),
        },
    )


def _reason(exc: Exception) -> str:
    return str(exc) or type(exc).__name__


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
    existing = await fanout.store.get_dispatch(delivery_id, repo)
    if existing is not None and existing.get("superseded_by"):
        # A newer head of its PR came while it waited (SPEC §15): never sent.
        metrics.DISPATCHES.labels(outcome="dropped_superseded").inc()
        _audit(fanout, repo, delivery_id, "dropped", "superseded")
        return True
    if fanout.still_listed is not None and not await fanout.still_listed(repo):
        # Revoked while it waited (SPEC §12): never sent, and no callback can bind to it.
        status, error, outcome = DispatchStatus.FAILED, REMOVED, "dropped_removed"
        log.info("queued dispatch dropped: %s", REMOVED, extra={"repo": repo})
    else:
        body = encode_dispatch(str(payload["event_type"]), payload["client_payload"])
        try:
            await fanout.send(repo, body)
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
    audited = "sent" if status is DispatchStatus.DISPATCHED else "failed"
    _audit(fanout, repo, delivery_id, "dropped" if error == REMOVED else audited, error)
    return True


REMOVED = "removed from the allowlist"

_AUDITED = {Result.DISPATCHED: "sent", Result.QUEUED: "queued", Result.FAILED: "failed"}
"""How a dispatch's outcome reads in the audit trail."""


def _audit(fanout: FanOut, repo: str, delivery_id: str, outcome: str, error: str | None) -> None:
    if fanout.audit is not None:
        fanout.audit.record(dispatch_entry(repo, delivery_id, outcome, error))

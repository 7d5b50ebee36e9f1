"""The sweeper: finalises zombie jobs and retries queued deliveries (SPEC §1, §7).

One leader across instances (a lock in the state store) runs it in the background;
`crcr sweep` runs one pass. Every step is safe to run twice or concurrently: zombies
are finalised by an atomic transition, queue items are handed out under leases. A pass
ends well inside those leases and the leader lock (`PassLimit`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from crcr.relay.allowlist import Level
from crcr.relay.callback_accept import run_hooks
from crcr.relay.callback_deps import AcceptedCallback, AcceptedHook
from crcr.relay.hud_body import build_hud_body, dispatch_section, elapsed, payload_for_timeout
from crcr.relay.hud_forwarder import HUD_QUEUE, Delivery, HudForwarder
from crcr.relay.job_state import TIMEOUT_FROM, JobState, timed_out_record
from crcr.relay.metrics_callback import (
    COMPLETIONS_REDONE,
    HUD_FORWARDS,
    JOB_FAILURES,
    QUEUE_DEPTH,
    QUEUE_OLDEST_AGE,
    ZOMBIES_FINALISED,
)
from crcr.relay.records import DispatchRecord
from crcr.relay.sweep_limit import PassLimit
from crcr.settings import Settings
from crcr.stores.state import LeasedItem, StateStore, StateStoreUnavailable

log = logging.getLogger(__name__)

LOCK_NAME = "sweeper"

FAILED_JOB_RETRY = 3600.0
"""Seconds before the sweeper tries again an overdue job it failed on.

Such a job is usually one it can never handle (a record from an older release, or a
corrupt one). Left due, it would come first on the deadline list every pass and hold up
the jobs behind it; an hour on, it costs one log line an hour until its record expires
(`CRCR_STATUS_TTL`), and is finalised should a fix let it through.
"""


class HandlerResult(StrEnum):
    """What a queue handler made of one item."""

    DONE = "done"  # acknowledged: delivered, or no longer needed
    RETRY = "retry"  # released with backoff
    DROP = "drop"  # acknowledged and logged: retrying can never succeed


QueueHandler = Callable[[LeasedItem], Awaitable[HandlerResult]]


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with jitter: base * 2^attempts, capped, times 0.5-1.0.

    The jitter spreads the retries of items that failed together (a HUD outage queues
    many at once) so that they do not hit the HUD together when it comes back.
    """

    base: float = 5.0
    cap: float = 900.0
    random: Callable[[], float] = random.random

    def delay(self, attempts: int) -> float:
        """Seconds before the next try of an item that has failed `attempts` times."""
        ceiling = min(self.cap, self.base * 2.0 ** min(attempts, 30))
        return float(ceiling * (0.5 + self.random() / 2))


@dataclass
class SweepReport:
    """What one pass did, for the CLI and the tests."""

    zombies_finalised: int = 0
    completions_redone: int = 0
    jobs_failed: int = 0
    handled: dict[str, dict[str, int]] = field(default_factory=dict)
    cut_short: str | None = None  # why work was left for the next pass, if it was

    def count(self, queue: str, result: HandlerResult) -> None:
        """Count one handled item."""
        per_queue = self.handled.setdefault(queue, {})
        per_queue[str(result)] = per_queue.get(str(result), 0) + 1


def hud_queue_handler(store: StateStore, forwarder: HudForwarder) -> QueueHandler:
    """Retry one queued HUD body, unless the job has moved on since it was queued.

    A queued in_progress delivered after the job's completed row would regress the
    row, and a queued timed_out would overwrite the late truth: such stale items are
    acknowledged unsent (the newer body already carries everything they did).
    """

    async def handle(item: LeasedItem) -> HandlerResult:
        expect = item.payload.get("expect")
        if isinstance(expect, Mapping) and expect.get("job_key"):
            job = await store.get_job(str(expect["job_key"]))
            stale = job is not None and (
                job.state != expect.get("state")
                or job.data.get("conclusion") != expect.get("conclusion")
            )
            if stale:
                HUD_FORWARDS.labels(result="stale").inc()
                return HandlerResult.DONE
        result = await forwarder.try_send(item.payload["body"])
        if result.delivery is Delivery.DELIVERED:
            HUD_FORWARDS.labels(result="retried").inc()
            return HandlerResult.DONE
        if result.delivery is Delivery.REJECTED:
            log.error(
                "HUD refused queued item %s with HTTP %s: %s",
                item.item_id,
                result.status_code,
                result.message,
            )
            HUD_FORWARDS.labels(result="dropped").inc()
            return HandlerResult.DROP
        return HandlerResult.RETRY

    return handle


def _hud_body_from_job(
    data: Mapping[str, Any], *, execution_time: float | None, callback_payload: Mapping[str, Any]
) -> dict[str, Any]:
    """A SPEC §6 body from what the in_progress callback stored in the job record."""
    record = DispatchRecord.from_store(data["record"])
    return build_hud_body(
        verified_repo=str(data["verified_repo"]),
        level=str(Level[str(data["level"])]),
        queue_time=data.get("queue_time"),
        execution_time=execution_time,
        dispatch=dispatch_section(record.context),
        callback_payload=callback_payload,
    )


class Sweeper:
    """Finalise overdue jobs, then drain every retry queue through its handler.

    `on_finalised` hooks get a job the sweeper timed out or whose completion it redid,
    as the callback's `on_accepted` hooks would have. Queue items are leased for two
    minutes: a pass starts none later than half a lease after taking it (`PassLimit`),
    and one item (a dispatch through GitHub's retries) can take most of a minute.
    """

    def __init__(
        self,
        store: StateStore,
        forwarder: HudForwarder,
        settings: Settings,
        *,
        queue_handlers: Mapping[str, QueueHandler] | None = None,
        on_finalised: Sequence[AcceptedHook] = (),
        instance_id: str | None = None,
        clock: Callable[[], float] = time.time,
        backoff: Backoff | None = None,
        lease_seconds: float = 120.0,
        batch_size: int = 50,
        hook_budget: float = 10.0,
    ) -> None:
        self._store = store
        self._forwarder = forwarder
        self._settings = settings
        self.queue_handlers: dict[str, QueueHandler] = {
            HUD_QUEUE: hud_queue_handler(store, forwarder),
            **(queue_handlers or {}),
        }
        self._on_finalised = list(on_finalised)
        self.instance_id = instance_id or uuid.uuid4().hex
        self._clock = clock
        self._backoff = backoff or Backoff()
        self._lease_seconds = lease_seconds
        self._batch_size = batch_size
        self._hook_budget = hook_budget

    async def sweep_once(self) -> SweepReport:
        """One pass without the leader lock (`crcr sweep`), within half a lease."""
        return await self._sweep(PassLimit(self._clock, self._lease_seconds / 2))

    async def sweep_as_leader(self, lock_ttl: float) -> SweepReport | None:
        """Take or renew the leader lock and sweep while holding it; None if another leads."""
        if not await self._store.acquire_lock(LOCK_NAME, self.instance_id, lock_ttl):
            return None

        async def renew_lock() -> bool:
            return await self._store.acquire_lock(LOCK_NAME, self.instance_id, lock_ttl)

        budget = min(self._lease_seconds, lock_ttl) / 2
        return await self._sweep(PassLimit(self._clock, budget, renew_lock))

    async def _sweep(self, limit: PassLimit) -> SweepReport:
        """Overdue jobs first, so that their HUD rows go out in the same pass."""
        report = SweepReport()
        steps = len(self.queue_handlers) + 1
        limit.start_step(steps)
        await self.finalise_overdue(report, limit)
        for index, (queue, handler) in enumerate(self.queue_handlers.items()):
            limit.start_step(steps - 1 - index)
            await self.drain(queue, handler, report, limit)
        await self.export_queue_gauges()
        report.cut_short = limit.cut_short
        if report.cut_short is not None:
            log.info(
                "sweeper pass cut short (%s); the rest waits for the next pass", report.cut_short
            )
        return report

    async def finalise_overdue(self, report: SweepReport, limit: PassLimit) -> None:
        """Time out jobs in progress past `CRCR_ZOMBIE_TIMEOUT`; redo lost completions.

        A completion is lost when its relay died between the transition and the HUD row
        and hooks (see `callback_accept.COMPLETION_GRACE`). A job still due after its
        visit (see `_finalise`) comes back from `overdue`: it waits for the next pass.
        """
        now = self._clock()
        seen: set[str] = set()
        while True:
            keys = await self._store.overdue(now, limit=self._batch_size)
            fresh = [key for key in keys if key not in seen]
            for key in fresh:
                if not await limit.allows_more():
                    return
                seen.add(key)
                await self._visit(key, now, report)
            if len(keys) < self._batch_size or not fresh:
                return

    async def _visit(self, key: str, now: float, report: SweepReport) -> None:
        """Finalise one overdue job; a job that fails is logged and tried again later.

        One record the sweeper cannot handle (an older format, a corrupt one) must not
        abort the pass, every pass, before any queue is drained.
        """
        try:
            finished = await self._finalise(key, now, report)
        except StateStoreUnavailable:
            raise
        except Exception:
            # Job records hold no credentials: the exception may quote them.
            log.exception(
                "sweeper failed on overdue job %s; trying again in %.0f s", key, FAILED_JOB_RETRY
            )
            JOB_FAILURES.inc()
            report.jobs_failed += 1
            await self._store.track_deadline(key, now + FAILED_JOB_RETRY)
            return
        if finished:
            await self._store.untrack_deadline(key)

    async def _finalise(self, key: str, now: float, report: SweepReport) -> bool:
        """Time out or redo one overdue job; whether it may leave the deadline list.

        It leaves once timed out or redone, or when there is nothing left to watch (the
        record is gone, or timed out already). A job whose timeout did not apply has
        moved on since it was read: typically a completion landed, whose relay may still
        be writing the HUD row, or may die before it does. It stays, and the next pass
        looks again (and redoes the completion, unless its relay finished it first).
        """
        job = await self._store.get_job(key)
        if job is None:
            return True
        if job.state == JobState.IN_PROGRESS:
            if not await self._time_out(key, job.data, now):
                return False
            report.zombies_finalised += 1
        elif job.state == JobState.COMPLETED:
            await self._redo_completion(key, job.data)
            report.completions_redone += 1
        return True

    async def _time_out(self, key: str, data: Mapping[str, Any], now: float) -> bool:
        hud_body = _hud_body_from_job(
            data,
            execution_time=elapsed(now, data.get("in_progress_at")),
            callback_payload=payload_for_timeout(data.get("callback") or {}, completed_at=now),
        )
        # Queued *before* the transition: a crash in between leaves a queued body the
        # queue handler drops as stale if the transition never happened, instead of a
        # TIMED_OUT job whose HUD row was never written.
        expect = {"job_key": key, "state": str(JobState.TIMED_OUT), "conclusion": "timed_out"}
        await self._forwarder.enqueue(hud_body, expect=expect, item_id=f"timeout:{key}")
        transition = await self._store.transition_job(
            key,
            allowed_from={None if s is None else str(s) for s in TIMEOUT_FROM},
            new=timed_out_record({"timed_out_at": now}),
            ttl=self._settings.status_ttl,
        )
        if not transition.applied:
            return False
        ZOMBIES_FINALISED.inc()
        await self._run_hooks(key, data, JobState.TIMED_OUT, hud_body)
        return True

    async def _redo_completion(self, key: str, data: Mapping[str, Any]) -> None:
        """The HUD row and hooks of a completion, from the job record, through the queue.

        Both are safe to repeat (the row is an upsert, check runs are queued once per
        transition), so a completion whose effects were done after all costs nothing.
        The row carries the callback minus the echoed payload: a HUD that reads the
        echo (PyTorch's) gets it without, as it does for a timed-out job.
        """
        log.warning("job %s completed without its HUD row and hooks confirmed; redoing them", key)
        hud_body = _hud_body_from_job(
            data,
            execution_time=elapsed(data.get("completed_at"), data.get("in_progress_at")),
            callback_payload=data.get("callback") or {},
        )
        conclusion = data.get("conclusion")
        expect = {"job_key": key, "state": str(JobState.COMPLETED), "conclusion": conclusion}
        await self._forwarder.enqueue(hud_body, expect=expect, item_id=f"completed:{key}")
        COMPLETIONS_REDONE.inc()
        await self._run_hooks(key, data, JobState.COMPLETED, hud_body)

    async def _run_hooks(
        self, key: str, data: Mapping[str, Any], state: JobState, hud_body: Mapping[str, Any]
    ) -> None:
        accepted = AcceptedCallback(
            verified_repo=str(data["verified_repo"]),
            level=Level[str(data["level"])],
            body=None,
            callback_payload=hud_body["untrusted"]["callback_payload"],
            record=DispatchRecord.from_store(data["record"]),
            job_key=key,
            state=state,
            hud_body=hud_body,
            hud_delivery=Delivery.QUEUED,
            source="sweeper",
        )
        await run_hooks(self._on_finalised, accepted, budget=self._hook_budget)

    async def drain(
        self, queue: str, handler: QueueHandler, report: SweepReport, limit: PassLimit
    ) -> None:
        """Handle every item of `queue` that is ready now, one leased batch at a time.

        Items leased but left when `limit` says stop stay leased: they are handed out
        again when their lease ends, and count no attempt.
        """
        seen: set[str] = set()
        while True:
            items = await self._store.lease(
                queue, lease_seconds=self._lease_seconds, limit=self._batch_size
            )
            fresh = [item for item in items if item.item_id not in seen]
            for item in fresh:
                if not await limit.allows_more():
                    return
                seen.add(item.item_id)
                result = await self._handle(queue, handler, item)
                report.count(queue, result)
            if len(items) < self._batch_size or not fresh:
                return

    async def _handle(self, queue: str, handler: QueueHandler, item: LeasedItem) -> HandlerResult:
        try:
            result = await handler(item)
        except StateStoreUnavailable:
            raise
        except Exception:
            log.exception("%s queue handler failed on item %s", queue, item.item_id)
            result = HandlerResult.RETRY
        if result is HandlerResult.RETRY:
            delay = self._backoff.delay(item.attempts)
            await self._store.release(queue, item.item_id, item.lease_token, delay=delay)
        else:
            await self._store.ack(queue, item.item_id, item.lease_token)
        return result

    async def export_queue_gauges(self) -> None:
        """Publish depth and oldest age of every queue for `/metrics`."""
        for queue in self.queue_handlers:
            stats = await self._store.queue_stats(queue)
            QUEUE_DEPTH.labels(queue=queue).set(stats.depth)
            QUEUE_OLDEST_AGE.labels(queue=queue).set(stats.oldest_age_seconds)

    async def run(self, stop: asyncio.Event, *, interval: float = 15.0) -> None:
        """Sweep every `interval` seconds while this instance holds the leader lock.

        An instance that does not lead still refreshes its queue gauges each interval.
        """
        try:
            while not stop.is_set():
                try:
                    if await self.sweep_as_leader(interval * 4) is None:
                        # A scrape of /metrics reaches any worker or instance, not just
                        # the leader: each keeps its own gauges of the shared queues.
                        await self.export_queue_gauges()
                except StateStoreUnavailable as exc:
                    log.warning("sweeper: state store unavailable: %s", exc)
                except Exception:
                    log.exception("sweeper pass failed")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=interval)
        finally:
            with contextlib.suppress(StateStoreUnavailable):
                await self._store.release_lock(LOCK_NAME, self.instance_id)


@dataclass
class BackgroundSweeper:
    """The sweeper as an asyncio task, for the app's lifespan."""

    sweeper: Sweeper
    interval: float = 15.0
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start sweeping in the background."""
        self._task = asyncio.create_task(self.sweeper.run(self._stop, interval=self.interval))

    async def stop(self) -> None:
        """Stop after the current pass and give up the leader lock."""
        self._stop.set()
        if self._task is not None:
            await self._task
            self._task = None

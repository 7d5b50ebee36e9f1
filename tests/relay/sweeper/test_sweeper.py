"""The sweeper: zombies become timed_out rows, queued deliveries are retried with
backoff, custom queues get their handlers, and one instance leads at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio
import typer
from prometheus_client import REGISTRY
from sqlalchemy import select
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import L2_REPO, Relay, StoreOpener, callback_body
from tests.waiting import eventually
from typer.testing import CliRunner

from crcr.cli import sweep as sweep_cli
from crcr.hud.db import create_results_engine
from crcr.hud.models import JobExecution
from crcr.relay.jobs.events import JobHook, JobTransitioned
from crcr.relay.jobs.lifecycle import COMPLETION_GRACE, JobState, job_store_key
from crcr.relay.jobs.queue_handler import HandlerResult, QueueHandler
from crcr.relay.results.forwarder import HUD_QUEUE, HudForwarder
from crcr.relay.sweeper.leadership import Leadership
from crcr.relay.sweeper.metrics import QUEUE_DEPTH
from crcr.relay.sweeper.overdue import FAILED_JOB_RETRY
from crcr.relay.sweeper.pass_limit import PassLimit
from crcr.relay.sweeper.report import SweepReport
from crcr.relay.sweeper.sweeper import LOCK_NAME, BackgroundSweeper, Sweeper
from crcr.stores.keys import RedisKeys
from crcr.stores.sqlite.state import SqliteStateStore
from crcr.stores.state import JobRecord, LeasedItem
from crcr.web.retry_policy import EQUAL_JITTER, Backoff

opener, signing_key, issuer = harness.opener, harness.signing_key, harness.issuer
relay = harness.relay

JOB = job_store_key("d-1", L2_REPO, "9001", "1", "test")


async def start_job(relay: Relay) -> None:
    await relay.dispatch("d-1")
    assert (await relay.post(callback_body("d-1"))).status_code == 200


# --- zombies -----------------------------------------------------------------------


async def test_a_job_in_progress_past_the_timeout_becomes_a_timed_out_row(relay: Relay) -> None:
    await start_job(relay)
    relay.clock.advance(relay.settings.zombie_timeout + 7)

    report = await relay.sweeper.sweep_once()

    assert report.zombies_finalised == 1
    row = relay.hud.only_row()
    assert (row["status"], row["conclusion"]) == ("completed", "timed_out")
    assert row["execution_time"] == relay.settings.zombie_timeout + 7
    assert row["completed_at"] is not None
    sent = relay.hud.received[-1]["untrusted"]["callback_payload"]["workflow"]
    assert sent["completed_at"].endswith("Z")
    job = await relay.store.get_job(JOB)
    assert job is not None and job.state == JobState.TIMED_OUT
    (event,) = [e for e in relay.accepted if e.source == "sweeper"]
    assert event.job.state is JobState.TIMED_OUT
    assert event.job.dispatch.context.head_sha == "a" * 40
    assert (await relay.sweeper.sweep_once()).zombies_finalised == 0


async def test_a_job_is_left_alone_until_its_deadline(relay: Relay) -> None:
    await start_job(relay)
    relay.clock.advance(relay.settings.zombie_timeout - 1)

    report = await relay.sweeper.sweep_once()

    assert report.zombies_finalised == 0
    assert relay.hud.only_row()["status"] == "in_progress"


async def test_a_completed_job_is_never_timed_out(relay: Relay) -> None:
    await start_job(relay)
    await relay.post(callback_body("d-1", "completed", "success"))
    relay.clock.advance(relay.settings.zombie_timeout * 2)

    report = await relay.sweeper.sweep_once()

    assert (report.zombies_finalised, report.completions_redone) == (0, 0)
    assert relay.hud.only_row()["conclusion"] == "success"
    assert relay.hud.writes == 2
    assert [e.source for e in relay.accepted] == ["callback", "callback"]


async def job_state(relay: Relay) -> str | None:
    job = await relay.store.get_job(JOB)
    return None if job is None else job.state


async def until_job_is(relay: Relay, state: JobState) -> None:
    deadline = time.monotonic() + 5
    while await job_state(relay) != state:
        assert time.monotonic() < deadline, f"the job never became {state}"
        await asyncio.sleep(0.01)


def recorded(relay: Relay) -> JobHook:
    async def record(event: JobTransitioned) -> None:
        relay.accepted.append(event)

    return record


class LandingFirst(HudForwarder):
    """The relay's forwarder, with something landing just before each body is queued.

    The sweeper queues a job's timed_out row after reading the job and before its
    transition: what lands here lands between the two.
    """

    def __init__(self, relay: Relay, lands: Callable[[], Awaitable[None]]) -> None:
        super().__init__(
            relay.deps.forwarder.transport, relay.store, timeout=relay.settings.hud_timeout
        )
        self._lands = lands

    async def enqueue(
        self,
        body: Mapping[str, Any],
        *,
        expect: Mapping[str, Any] | None = None,
        item_id: str | None = None,
    ) -> bool:
        await self._lands()
        return await super().enqueue(body, expect=expect, item_id=item_id)


async def test_a_completion_whose_relay_died_before_the_hud_row_is_redone_after_its_grace(
    relay: Relay,
) -> None:
    await start_job(relay)
    relay.clock.advance(30)
    relay.hud.delay = 60.0  # the HUD write is under way when the process dies
    completing = asyncio.create_task(relay.post(callback_body("d-1", "completed", "success")))
    await until_job_is(relay, JobState.COMPLETED)
    completing.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await completing
    relay.hud.delay = 0.0
    retry = await relay.post(callback_body("d-1", "completed", "success"))
    assert retry.json() == {"status": "duplicate"}  # the reporter's retry cannot do it
    assert relay.hud.only_row()["status"] == "in_progress"

    relay.clock.advance(COMPLETION_GRACE - 1)
    assert (await relay.sweeper.sweep_once()).completions_redone == 0
    relay.clock.advance(2)
    report = await relay.sweeper.sweep_once()

    assert (report.completions_redone, report.zombies_finalised) == (1, 0)
    row = relay.hud.only_row()
    assert (row["status"], row["conclusion"], row["execution_time"]) == ("completed", "success", 30)
    (event,) = [e for e in relay.accepted if e.source == "sweeper"]
    assert event.job.state is JobState.COMPLETED and event.job.key == JOB
    assert (await relay.sweeper.sweep_once()).completions_redone == 0


async def test_a_completion_landing_while_the_sweeper_times_the_job_out_keeps_its_safety_net(
    relay: Relay,
) -> None:
    await start_job(relay)
    relay.clock.advance(relay.settings.zombie_timeout + 1)
    relay.hud.delay = 60.0  # the completing relay is still writing the HUD row...
    completing: list[asyncio.Task[object]] = []

    async def completion_lands() -> None:
        completing.append(
            asyncio.create_task(relay.post(callback_body("d-1", "completed", "success")))
        )
        await until_job_is(relay, JobState.COMPLETED)

    sweeper = Sweeper(
        relay.store,
        LandingFirst(relay, completion_lands),
        relay.settings,
        clock=relay.clock,
        on_finalised=[recorded(relay)],
    )
    first = await sweeper.sweep_once()
    (task,) = completing
    task.cancel()  # ...when it dies
    with contextlib.suppress(asyncio.CancelledError):
        await task
    relay.hud.delay = 0.0

    second = await sweeper.sweep_once()

    assert (first.zombies_finalised, first.completions_redone) == (0, 0)
    assert (second.zombies_finalised, second.completions_redone) == (0, 1)
    row = relay.hud.only_row()
    assert (row["status"], row["conclusion"]) == ("completed", "success")
    (event,) = [e for e in relay.accepted if e.source == "sweeper"]
    assert event.job.state is JobState.COMPLETED
    assert await relay.store.overdue(relay.clock() + COMPLETION_GRACE) == []


async def track_in_progress(relay: Relay, name: str, data: Mapping[str, Any]) -> str:
    """An in-progress job on the deadline list, due a second from now (before `start_job`'s)."""
    key = job_store_key("d-0", L2_REPO, "9000", "1", name)
    new = JobRecord(str(JobState.IN_PROGRESS), {"in_progress_at": relay.clock(), **data})
    await relay.store.transition_job(key, allowed_from={None}, new=new, ttl=3600)
    await relay.store.track_deadline(key, relay.clock() + 1)
    return key


async def corrupt_job(opener: StoreOpener, key: str) -> None:
    """Overwrite part of a job record with text no JSON decoder accepts, behind the store."""
    if opener.kind == "sqlite":
        with contextlib.closing(sqlite3.connect(opener.path)) as db, db:
            db.execute(
                "UPDATE records SET value = '{not json' WHERE kind = 'job' AND key = ?", (key,)
            )
        return
    assert opener.redis_url is not None
    client = redis.asyncio.Redis.from_url(opener.redis_url)
    try:
        await client.hset(RedisKeys(opener.prefix).job(key), "d:record", "{not json")
    finally:
        await client.aclose()


def failures_counted() -> float:
    return REGISTRY.get_sample_value("crcr_sweeper_job_failures_total") or 0.0


async def test_jobs_the_sweeper_cannot_read_are_logged_and_retried_later_and_the_pass_goes_on(
    relay: Relay, opener: StoreOpener, caplog: pytest.LogCaptureFixture
) -> None:
    old_format = await track_in_progress(relay, "old", {"record": {"delivery_id": "d-0"}})
    undecodable = await track_in_progress(relay, "corrupt", {"record": {}})
    await corrupt_job(opener, undecodable)
    with pytest.raises(ValueError):
        await relay.store.get_job(undecodable)
    await start_job(relay)
    relay.clock.advance(relay.settings.zombie_timeout + 1)
    counted = failures_counted()

    report = await relay.sweeper.sweep_once()

    assert (report.jobs_failed, report.zombies_finalised) == (2, 1)
    assert failures_counted() == counted + 2
    assert report.handled[HUD_QUEUE] == {"done": 1}  # the zombie's timed_out row, delivered
    assert relay.hud.only_row()["conclusion"] == "timed_out"
    logged = [r.getMessage() for r in caplog.records if r.name == "crcr.relay.sweeper.overdue"]
    assert any(old_format in message for message in logged)
    assert any(undecodable in message for message in logged)
    # Not every pass: each is tried again once FAILED_JOB_RETRY has passed.
    assert (await relay.sweeper.sweep_once()).jobs_failed == 0
    relay.clock.advance(FAILED_JOB_RETRY)
    assert (await relay.sweeper.sweep_once()).jobs_failed == 2


async def test_a_timeout_row_queued_while_the_hud_is_down_yields_to_the_late_truth(
    relay: Relay,
) -> None:
    await start_job(relay)
    relay.clock.advance(relay.settings.zombie_timeout + 1)
    relay.hud.down = True
    assert (await relay.sweeper.sweep_once()).zombies_finalised == 1
    relay.hud.down = False
    late = await relay.post(callback_body("d-1", "completed", "success"))

    report = await relay.sweeper.sweep_once()

    assert late.status_code == 200
    assert report.handled[HUD_QUEUE] == {"skipped": 1}  # acknowledged unsent: stale
    assert relay.hud.only_row()["conclusion"] == "success"


async def test_a_timeout_row_reaches_the_hud_once_it_is_back(relay: Relay) -> None:
    await start_job(relay)
    relay.clock.advance(relay.settings.zombie_timeout + 1)
    relay.hud.down = True
    await relay.sweeper.sweep_once()
    assert relay.hud.only_row()["status"] == "in_progress"
    relay.hud.down = False

    await relay.sweeper.sweep_once()

    assert relay.hud.only_row()["conclusion"] == "timed_out"
    assert (await relay.store.queue_stats(HUD_QUEUE)).depth == 0


# --- queues --------------------------------------------------------------------------


def test_backoff_doubles_up_to_the_cap_and_jitters_down_to_half() -> None:
    backoff = Backoff(base=2.0, cap=10.0, jitter=EQUAL_JITTER)

    assert [backoff.delay(n, lambda: 1.0) for n in range(4)] == [2.0, 4.0, 8.0, 10.0]
    assert [backoff.delay(n, lambda: 0.0) for n in range(4)] == [1.0, 2.0, 4.0, 5.0]
    assert backoff.delay(10_000, lambda: 1.0) == 10.0


async def test_other_queues_are_drained_by_their_own_handlers(relay: Relay) -> None:
    seen: list[tuple[str, int]] = []
    answers = {"a": [HandlerResult.RETRY, HandlerResult.DONE], "b": [HandlerResult.DROP]}

    async def dispatch_handler(item: LeasedItem) -> HandlerResult:
        seen.append((item.item_id, item.attempts))
        return answers[item.item_id].pop(0)

    sweeper = Sweeper(
        relay.store,
        relay.deps.forwarder,
        relay.settings,
        queue_handlers={"dispatch": dispatch_handler},
        backoff=Backoff(base=0.0),
    )
    await relay.store.enqueue("dispatch", "a", {"repo": "org2/l2-backend"})
    await relay.store.enqueue("dispatch", "b", {"repo": "org4/critical"})

    first = await sweeper.sweep_once()
    second = await sweeper.sweep_once()

    # "a" is the first pass's probe; its failure leaves "b" for the next pass.
    assert first.handled["dispatch"] == {"retry": 1}
    assert first.resting == ["dispatch"]
    assert second.handled["dispatch"] == {"drop": 1, "done": 1}
    assert sorted(seen) == [("a", 0), ("a", 1), ("b", 0)]
    assert (await relay.store.queue_stats("dispatch")).depth == 0


async def test_a_handler_that_raises_is_retried_later(relay: Relay) -> None:
    async def broken(item: LeasedItem) -> HandlerResult:
        raise RuntimeError("boom")

    sweeper = Sweeper(
        relay.store, relay.deps.forwarder, relay.settings, queue_handlers={"dispatch": broken}
    )
    await relay.store.enqueue("dispatch", "a", {})

    report = await sweeper.sweep_once()

    assert report.handled["dispatch"] == {"retry": 1}
    assert (await relay.store.queue_stats("dispatch")).depth == 1
    assert await relay.store.lease("dispatch", lease_seconds=5) == []  # backing off


async def test_a_due_timer_of_another_component_goes_to_its_handler(relay: Relay) -> None:
    """The deadline list also holds timers (the check publisher's watches, SPEC §10.2)."""
    seen: list[tuple[str, float]] = []
    answers = {"watch\x1fdone": True, "watch\x1fagain": False}

    async def handler(key: str, now: float) -> bool:
        seen.append((key, now))
        return answers[key]

    sweeper = Sweeper(
        relay.store,
        relay.deps.forwarder,
        relay.settings,
        clock=relay.clock,
        deadline_handlers={"watch\x1f": handler},
    )
    for key in answers:
        await relay.store.track_deadline(key, relay.clock() - 1)
    await relay.store.track_deadline("watch\x1flater", relay.clock() + 60)

    await sweeper.sweep_once()

    assert sorted(seen) == [("watch\x1fagain", relay.clock()), ("watch\x1fdone", relay.clock())]
    assert await relay.store.overdue(relay.clock() + 60) == ["watch\x1fagain", "watch\x1flater"]


async def test_queue_depth_and_age_are_exported(relay: Relay) -> None:
    relay.hud.down = True
    await relay.dispatch("d-1")
    await relay.post(callback_body("d-1"))

    await relay.sweeper.sweep_once()

    assert REGISTRY.get_sample_value("crcr_queue_depth", {"queue": HUD_QUEUE}) == 1.0
    age = REGISTRY.get_sample_value("crcr_queue_oldest_age_seconds", {"queue": HUD_QUEUE})
    assert age is not None and age >= 0.0


async def test_an_instance_that_does_not_lead_drains_the_queues_but_leaves_overdue_jobs(
    relay: Relay,
) -> None:
    await start_job(relay)
    relay.clock.advance(relay.settings.zombie_timeout + 1)
    relay.hud.down = True
    await relay.dispatch("d-2")
    await relay.post(callback_body("d-2"))
    relay.hud.down = False  # any instance may now deliver the queued row
    assert await relay.store.acquire_lock(LOCK_NAME, "the-leader", 60)
    follower = Sweeper(
        relay.store, relay.deps.forwarder, relay.settings, instance_id="f", clock=relay.clock
    )
    QUEUE_DEPTH.labels(queue=HUD_QUEUE).set(-1)  # what another pass left behind
    stop = asyncio.Event()
    task = asyncio.create_task(follower.run(stop, interval=0.05))
    try:
        await eventually(
            lambda: REGISTRY.get_sample_value("crcr_queue_depth", {"queue": HUD_QUEUE}) == 0
        )
    finally:
        stop.set()
        await task
    assert (await relay.store.queue_stats(HUD_QUEUE)).depth == 0
    job = await relay.store.get_job(JOB)
    assert job is not None and job.state == JobState.IN_PROGRESS  # the zombie is the leader's


# --- leadership ------------------------------------------------------------------------


def counting(sweeper: Sweeper, counts: dict[str, int]) -> None:
    """Count the passes `sweeper` makes as the leader."""
    original = sweeper._sweep

    async def sweep(limit: PassLimit, leads: Callable[[], bool]) -> SweepReport:
        report = await original(limit, leads)
        if report.led:
            counts[sweeper.instance_id] = counts.get(sweeper.instance_id, 0) + 1
        return report

    sweeper._sweep = sweep  # type: ignore[method-assign]


def fast_leadership(sweeper: Sweeper, ttl: float = 0.6) -> Sweeper:
    """The real heartbeat, on a scale a test can wait for."""
    sweeper.leadership = Leadership(
        sweeper.leadership._store, sweeper.instance_id, ttl=ttl, renew_every=ttl / 3
    )
    return sweeper


async def test_one_instance_leads_at_a_time_and_another_takes_over_when_it_stops(
    relay: Relay,
) -> None:
    counts: dict[str, int] = {}
    instances = [
        fast_leadership(Sweeper(relay.store, relay.deps.forwarder, relay.settings, instance_id=n))
        for n in ("a", "b")
    ]
    for sweeper in instances:
        counting(sweeper, counts)
    stops = [asyncio.Event(), asyncio.Event()]
    tasks = [
        asyncio.create_task(s.run(stop, interval=0.05))
        for s, stop in zip(instances, stops, strict=True)
    ]

    await eventually(lambda: sum(counts.values()) >= 4)
    assert len(counts) == 1
    (leader,) = counts
    follower = "b" if leader == "a" else "a"
    index = "ab".index(leader)
    stops[index].set()
    await tasks[index]
    # The stopping leader gave the lock up: the follower leads well inside its lifetime.
    await eventually(lambda: counts.get(follower, 0) >= 1)

    stops[1 - index].set()
    await tasks[1 - index]


async def test_a_leader_that_dies_holding_the_lock_is_replaced_once_the_short_lock_lapses(
    relay: Relay,
) -> None:
    """A dead leader never releases its lock: the survivor takes it when it lapses."""
    assert await relay.store.acquire_lock(LOCK_NAME, "dead", 0.6)
    counts: dict[str, int] = {}
    survivor = fast_leadership(
        Sweeper(relay.store, relay.deps.forwarder, relay.settings, instance_id="b")
    )
    counting(survivor, counts)
    stop = asyncio.Event()
    task = asyncio.create_task(survivor.run(stop, interval=30))
    try:
        # interval=30: the pass as leader comes from gaining the lock, not the schedule.
        await eventually(lambda: counts.get("b", 0) >= 1)
    finally:
        stop.set()
        await task
    assert await relay.store.acquire_lock(LOCK_NAME, "c", 60)  # "b" gave it up on stopping


async def test_leadership_is_believed_only_while_the_lock_cannot_have_lapsed(
    relay: Relay,
) -> None:
    now = [100.0]
    leadership = Leadership(relay.store, "a", ttl=6, clock=lambda: now[0])
    assert await leadership.renew() and leadership.leads
    now[0] += 5.9
    assert leadership.leads
    now[0] += 0.2  # no renewal went through for a whole lifetime: another may lead now
    assert not leadership.leads
    assert await relay.store.acquire_lock(LOCK_NAME, "a", 60)  # (the store's clock is real)
    await leadership.release()
    assert await relay.store.acquire_lock(LOCK_NAME, "b", 60)
    assert not await leadership.renew() and not leadership.leads


def taking(relay: Relay, seconds: float, handled: list[str]) -> QueueHandler:
    """A handler that takes `seconds` of the relay's clock per item, as a hanging HUD does."""

    async def handle(item: LeasedItem) -> HandlerResult:
        handled.append(item.item_id)
        relay.clock.advance(seconds)
        return HandlerResult.DONE

    return handle


async def enqueue(relay: Relay, queue: str, count: int) -> None:
    for n in range(count):
        await relay.store.enqueue(queue, f"{queue}-{n}", {})


async def test_a_pass_against_a_hanging_queue_ends_within_its_budget_and_spares_the_others(
    relay: Relay,
) -> None:
    hanging: list[str] = []
    quick: list[str] = []
    sweeper = Sweeper(
        relay.store,
        relay.deps.forwarder,
        relay.settings,
        clock=relay.clock,
        queue_handlers={"dispatch": taking(relay, 5.0, hanging), "checks": taking(relay, 0, quick)},
        pass_budget=30,
    )
    await enqueue(relay, "dispatch", 20)
    await enqueue(relay, "checks", 3)
    started = relay.clock()

    report = await sweeper.sweep_once()

    assert relay.clock() - started <= 30  # every item was started within the budget
    assert report.cut_short == "out of time"
    assert len(hanging) == 3  # half of the 30 s the empty steps before it left: 15 s
    assert report.handled["checks"] == {"done": 3}  # what the hanging queue left them
    assert (await relay.store.queue_stats("dispatch")).depth == 17
    # The rest were never leased: the next pass (or another sweeper) takes them at once.
    assert len(await relay.store.lease("dispatch", lease_seconds=60, limit=100)) == 17


async def test_a_leader_that_lost_the_lock_stops_its_overdue_jobs_but_drains_the_queues(
    relay: Relay,
) -> None:
    for delivery in ("d-1", "d-2", "d-3"):
        await relay.dispatch(delivery)
        await relay.post(callback_body(delivery))
    relay.clock.advance(relay.settings.zombie_timeout + 1)
    leads = iter([True])  # the lock lapsed (a stalled process) after one job
    handled: list[str] = []

    async def handle(item: LeasedItem) -> HandlerResult:
        handled.append(item.item_id)
        return HandlerResult.DONE

    sweeper = Sweeper(
        relay.store,
        relay.deps.forwarder,
        relay.settings,
        clock=relay.clock,
        queue_handlers={"dispatch": handle},
    )
    await enqueue(relay, "dispatch", 5)
    limit = PassLimit(relay.clock, 60, still_leads=lambda: next(leads, False))

    report = await sweeper._sweep(limit, leads=lambda: True)

    assert report.cut_short == "lost the leader lock"
    assert report.zombies_finalised == 1
    assert len(handled) == 5  # the queues need no leader
    assert report.handled["dispatch"] == {"done": 5}


async def test_an_item_handled_longer_than_its_lease_is_renewed_and_handed_to_no_one_else(
    relay: Relay,
) -> None:
    release = asyncio.Event()
    started = asyncio.Event()

    async def slow(item: LeasedItem) -> HandlerResult:
        started.set()
        await release.wait()
        return HandlerResult.DONE

    sweeper = Sweeper(
        relay.store,
        relay.deps.forwarder,
        relay.settings,
        queue_handlers={"dispatch": slow},
        item_lease=0.3,
    )
    await enqueue(relay, "dispatch", 1)
    sweeping = asyncio.create_task(sweeper.sweep_once())
    await asyncio.wait_for(started.wait(), 10)
    deadline = time.monotonic() + 1.0  # three lease terms
    while time.monotonic() < deadline:
        assert await relay.store.lease("dispatch", lease_seconds=60) == []
        await asyncio.sleep(0.05)
    release.set()
    report = await sweeping
    assert report.handled["dispatch"] == {"done": 1}
    assert (await relay.store.queue_stats("dispatch")).depth == 0


async def test_a_pass_told_to_stop_starts_no_new_item(relay: Relay) -> None:
    handled: list[str] = []
    stop = asyncio.Event()

    async def handle(item: LeasedItem) -> HandlerResult:
        handled.append(item.item_id)
        stop.set()  # the process got SIGTERM while this item was in flight
        return HandlerResult.DONE

    sweeper = Sweeper(
        relay.store, relay.deps.forwarder, relay.settings, queue_handlers={"dispatch": handle}
    )
    await enqueue(relay, "dispatch", 5)

    report = await sweeper._sweep(sweeper._limit(stop), leads=lambda: False)

    assert report.cut_short == "shutting down"
    assert report.handled["dispatch"] == {"done": 1}  # the item in flight finished
    assert len(await relay.store.lease("dispatch", lease_seconds=60, limit=100)) == 4


async def test_an_item_in_flight_when_shutdown_runs_out_of_grace_is_handed_back(
    relay: Relay,
) -> None:
    started = asyncio.Event()

    async def hang(item: LeasedItem) -> HandlerResult:
        started.set()
        await asyncio.Event().wait()  # a far end that never answers
        return HandlerResult.DONE

    sweeper = Sweeper(
        relay.store, relay.deps.forwarder, relay.settings, queue_handlers={"dispatch": hang}
    )
    await enqueue(relay, "dispatch", 1)
    background = BackgroundSweeper(sweeper, interval=30)
    background.start()
    await asyncio.wait_for(started.wait(), 10)
    assert await relay.store.lease("dispatch", lease_seconds=60) == []  # leased, in flight

    await background.stop(grace=0.1)

    [item] = await relay.store.lease("dispatch", lease_seconds=60)  # at once, not in 2 min
    assert item.item_id == "dispatch-0"
    assert await relay.store.acquire_lock(LOCK_NAME, "another", 60)  # the lock was given up


# --- crcr sweep ------------------------------------------------------------------------


def test_crcr_sweep_says_what_it_left_for_the_next_pass() -> None:
    report = SweepReport(jobs_failed=2, cut_short="out of time")

    lines = sweep_cli.describe(report).splitlines()

    assert "overdue jobs that failed (logged, tried again later): 2" in lines
    assert lines[-1] == "cut short (out of time): the rest waits for the next pass"


@pytest.fixture
def cli() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """Test entry point."""

    sweep_cli.register(app)
    return app


def sweep_env(tmp_path: Path) -> dict[str, str]:
    """What `crcr sweep` needs to start on SQLite state in `tmp_path`."""
    from crcr.sandbox.github_identity import SandboxApp

    allowlist = tmp_path / "allowlist.yaml"
    allowlist.write_text("L2:\n  - org/repo\n")
    app_identity = SandboxApp.generate()
    return {
        "CRCR_DATA_DIR": str(tmp_path),
        "CRCR_ALLOWLIST": str(allowlist),
        "CRCR_GITHUB_APP_ID": str(app_identity.app_id),
        "CRCR_GITHUB_APP_PRIVATE_KEY": app_identity.private_key_pem,
    }


async def queue_one_hud_row(tmp_path: Path, *, lock_holder: str | None = None) -> None:
    from tests.relay.results.test_forwarder import hud_body

    store = await SqliteStateStore.open(tmp_path / "state.db")
    await store.enqueue(HUD_QUEUE, "item-1", {"body": hud_body(), "expect": None})
    if lock_holder is not None:
        assert await store.acquire_lock(LOCK_NAME, lock_holder, 600)
    await store.close()


def hud_rows(tmp_path: Path) -> list[tuple[Any, ...]]:
    engine = create_results_engine(f"sqlite:///{tmp_path / 'hud.db'}")
    with engine.connect() as connection:
        rows = connection.execute(select(JobExecution.status, JobExecution.head_sha)).all()
    engine.dispose()
    return [tuple(row) for row in rows]


def test_crcr_sweep_delivers_queued_rows_to_the_local_hud(cli: typer.Typer, tmp_path: Path) -> None:
    asyncio.run(queue_one_hud_row(tmp_path))

    result = CliRunner().invoke(cli, ["sweep"], env=sweep_env(tmp_path))

    assert result.exit_code == 0, result.output
    assert "queue hud: done 1" in result.output
    assert "skipped" not in result.output  # no one else led: it did the leader's work too
    assert hud_rows(tmp_path) == [("in_progress", "a" * 40)]


def test_crcr_sweep_beside_a_leader_drains_the_queues_and_leaves_it_the_rest(
    cli: typer.Typer, tmp_path: Path
) -> None:
    asyncio.run(queue_one_hud_row(tmp_path, lock_holder="a-serving-instance"))

    result = CliRunner().invoke(cli, ["sweep"], env=sweep_env(tmp_path))

    assert result.exit_code == 0, result.output
    assert "overdue jobs and level syncs: skipped (another instance leads)" in result.output
    assert "queue hud: done 1" in result.output
    assert hud_rows(tmp_path) == [("in_progress", "a" * 40)]


def test_crcr_sweep_loop_leads_until_sigterm_then_gives_the_lock_up_and_exits_0(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRCR_")}
    env.update(sweep_env(tmp_path))
    process = subprocess.Popen(
        [sys.executable, "-m", "crcr", "sweep", "--loop"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )

    def holder() -> str | None:
        if not (tmp_path / "state.db").exists():
            return None
        with contextlib.closing(sqlite3.connect(tmp_path / "state.db", timeout=10)) as db:
            try:
                row = db.execute(
                    "SELECT value FROM records WHERE kind = 'lock' AND key = ? AND expires_at > ?",
                    (LOCK_NAME, time.time()),
                ).fetchone()
            except sqlite3.OperationalError:  # the schema is not there yet
                return None
        return None if row is None else str(row[0])

    try:
        deadline = time.monotonic() + 60
        while holder() is None or f":{process.pid}:" not in str(holder()):
            assert process.poll() is None, process.communicate()[0].decode()[-2000:]
            assert time.monotonic() < deadline, "crcr sweep --loop never took the lock"
            time.sleep(0.1)
        process.send_signal(signal.SIGTERM)
        output = process.communicate(timeout=60)[0].decode()
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, output[-2000:]
    assert holder() is None  # released, not left to lapse
    assert "this instance leads now" in output

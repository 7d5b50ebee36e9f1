"""Draining a retry queue: one probe while the far end is down, parallel sends once it is up."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
from tests.relay import callback_harness
from tests.relay.callback_harness import StoreOpener

from crcr.relay.jobs.queue_handler import HandlerResult
from crcr.relay.sweeper.drain import QUEUE_BACKOFF, QueueDrainer
from crcr.relay.sweeper.pass_limit import PassLimit
from crcr.relay.sweeper.report import SweepReport
from crcr.stores.state import LeasedItem, StateStore

opener = callback_harness.opener
QUEUE = "hud"


@pytest.fixture
async def store(opener: StoreOpener) -> AsyncIterator[StateStore]:
    opened = await opener.open()
    for n in range(10):
        await opened.enqueue(QUEUE, f"item-{n}", {"n": n})
    yield opened
    await opened.close()


def drainer(store: StateStore, parallel: int = 1) -> QueueDrainer:
    return QueueDrainer(
        store, QUEUE_BACKOFF, lease_seconds=60, batch_size=50, parallel={QUEUE: parallel}
    )


def limit() -> PassLimit:
    return PassLimit(time.time, 30)


async def test_a_far_end_that_is_down_gets_one_item_per_rest(store: StateStore) -> None:
    tried: list[str] = []

    async def down(item: LeasedItem) -> HandlerResult:
        tried.append(item.item_id)
        return HandlerResult.RETRY

    queue = drainer(store)
    first, second = SweepReport(), SweepReport()
    await queue.drain(QUEUE, down, first, limit())
    await queue.drain(QUEUE, down, second, limit())  # still resting

    assert len(tried) == 1
    assert first.handled == {QUEUE: {"retry": 1}} and first.resting == [QUEUE]
    assert second.handled == {}
    assert queue.resting(QUEUE)
    assert (await store.queue_stats(QUEUE)).depth == 10


async def test_skipped_items_say_nothing_and_the_probing_goes_on(store: StateStore) -> None:
    answers = iter([HandlerResult.SKIPPED, HandlerResult.SKIPPED, HandlerResult.RETRY])

    async def handler(item: LeasedItem) -> HandlerResult:
        return next(answers)

    report = SweepReport()
    await drainer(store).drain(QUEUE, handler, report, limit())

    assert report.handled == {QUEUE: {"skipped": 2, "retry": 1}}


async def test_once_the_probe_goes_through_the_rest_go_out_a_bounded_number_at_a_time(
    store: StateStore,
) -> None:
    in_flight, most, calls = 0, 0, 0
    together = asyncio.Barrier(3)  # the 9 after the probe meet in threes

    async def up(item: LeasedItem) -> HandlerResult:
        nonlocal in_flight, most, calls
        calls += 1
        if calls == 1:
            return HandlerResult.DONE  # the probe, alone
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.wait_for(together.wait(), timeout=10)
        in_flight -= 1
        return HandlerResult.DONE

    report = SweepReport()
    await drainer(store, parallel=3).drain(QUEUE, up, report, limit())

    assert report.handled == {QUEUE: {"done": 10}}
    assert most == 3
    assert (await store.queue_stats(QUEUE)).depth == 0


class Clock:
    """The drainer's monotonic clock, moved on by the test (probe rests end at once)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def drainer_on(store: StateStore, clock: Clock) -> QueueDrainer:
    return QueueDrainer(
        store, QUEUE_BACKOFF, lease_seconds=60, batch_size=50, parallel={QUEUE: 4}, clock=clock
    )


async def sent_in_one_pass(queue: QueueDrainer) -> list[str]:
    sent: list[str] = []

    async def up(item: LeasedItem) -> HandlerResult:
        sent.append(item.item_id)
        return HandlerResult.DONE

    await queue.drain(QUEUE, up, SweepReport(), limit())
    return sent


async def test_what_failed_while_the_far_end_was_down_goes_as_soon_as_it_is_back(
    store: StateStore,
) -> None:
    async def down(item: LeasedItem) -> HandlerResult:
        return HandlerResult.RETRY

    clock = Clock()
    queue = drainer_on(store, clock)
    for _ in range(3):  # three probes, three items now in backoff (2.5 s to 20 s)
        await queue.drain(QUEUE, down, SweepReport(), limit())
        clock.now += 60
    sent = await sent_in_one_pass(queue)

    assert sorted(sent) == [f"item-{n}" for n in range(10)]
    assert (await store.queue_stats(QUEUE)).depth == 0


async def test_a_restarted_process_sends_what_failed_before_without_waiting_its_backoff(
    store: StateStore,
) -> None:
    async def down(item: LeasedItem) -> HandlerResult:
        return HandlerResult.RETRY

    await drainer(store).drain(QUEUE, down, SweepReport(), limit())  # the process that died
    sent = await sent_in_one_pass(drainer_on(store, Clock()))

    assert len(sent) == 10


async def test_an_item_failing_alone_while_the_far_end_is_up_keeps_its_backoff(
    store: StateStore,
) -> None:
    async def refuses_one(item: LeasedItem) -> HandlerResult:
        return HandlerResult.RETRY if item.item_id == "item-5" else HandlerResult.DONE

    clock = Clock()
    queue = drainer_on(store, clock)
    await queue.drain(QUEUE, refuses_one, SweepReport(), limit())
    clock.now += 60  # the queue's rest is over; item-5's own backoff (≥ 2.5 s) is not
    await store.enqueue(QUEUE, "item-new", {"n": 10})

    sent = await sent_in_one_pass(queue)  # what the failure left unsent, and the new one

    assert "item-new" in sent and "item-5" not in sent
    assert (await store.queue_stats(QUEUE)).depth == 1  # item-5, waiting out its backoff

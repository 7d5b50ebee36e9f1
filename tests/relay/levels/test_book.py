"""The demotions in force, kept in the state store and read by every instance (SPEC §10.1)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import REGISTRY
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import StoreOpener

from crcr.relay.allowlist.model import Level, parse_allowlist
from crcr.relay.levels.book import DemotionBook
from crcr.relay.levels.status import BackendStatus
from crcr.stores.state import StateStore

opener = harness.opener


@pytest.fixture
async def store(opener: StoreOpener) -> AsyncIterator[StateStore]:
    """A fresh state store on each backend."""
    opened = await opener.open()
    yield opened
    await opened.close()


ALLOWLIST = parse_allowlist("L3:\n  xpu:\n    Org/XPU: []\nL4:\n  - org/critical\n")
START = datetime(2026, 11, 25, 10, 0, tzinfo=UTC)


def verdict(repo: str, level: Level, change: str | None) -> dict[str, BackendStatus]:
    return {repo.lower(): BackendStatus(repo, level, change, False, 7, ())}


def gauge(level: str) -> float | None:
    return REGISTRY.get_sample_value("crcr_demoted_backends", {"level": level})


async def test_a_demotion_started_by_one_instance_applies_to_new_jobs_on_another(
    store: StateStore,
) -> None:
    leader = DemotionBook(store, cache_seconds=0, now=lambda: START)
    other = DemotionBook(store, cache_seconds=0)
    await leader.refresh(verdict("Org/XPU", Level.L3, "demote"), ALLOWLIST)

    before, after = (START - timedelta(minutes=1)).timestamp(), START.timestamp() + 60
    assert await other.level_for_job("org/xpu", Level.L3, before) == Level.L3
    assert await other.level_for_job("org/xpu", Level.L3, after) == Level.L2
    assert await other.level_for_job("org/critical", Level.L4, after) == Level.L4
    assert gauge("L3") == 1.0 and gauge("L4") == 0.0

    shown = await other.demotions()
    assert list(shown) == ["Org/XPU"] and shown["Org/XPU"].since == START


async def test_refreshing_twice_keeps_the_first_start_and_recovery_ends_it(
    store: StateStore,
) -> None:
    clock = [START]
    book = DemotionBook(store, cache_seconds=0, now=lambda: clock[0])
    await book.refresh(verdict("Org/XPU", Level.L3, "demote"), ALLOWLIST)
    clock[0] = START + timedelta(hours=1)
    again = await book.refresh(verdict("Org/XPU", Level.L3, "demote"), ALLOWLIST)
    assert again.start == () and (await book.current())["org/xpu"].since == START

    await book.record_pull_request("Org/XPU", "https://github.com/o/u/pull/9")
    assert (await book.current())["org/xpu"].pr_url == "https://github.com/o/u/pull/9"

    await book.refresh(verdict("Org/XPU", Level.L3, None), ALLOWLIST)
    assert await book.current() == {}
    assert gauge("L3") == 0.0


async def test_reads_are_cached_for_a_few_seconds_per_instance(store: StateStore) -> None:
    clock = [0.0]
    reader = DemotionBook(store, cache_seconds=5, clock=lambda: clock[0])
    assert await reader.current() == {}
    await DemotionBook(store).refresh(verdict("org/critical", Level.L4, "demote"), ALLOWLIST)
    assert await reader.current() == {}
    clock[0] = 5.0
    assert list(await reader.current()) == ["org/critical"]

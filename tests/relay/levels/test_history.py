"""The level history (SPEC §10.2): episodes opened, closed and pruned in the state store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import StoreOpener

from crcr.relay.allowlist.model import parse_allowlist
from crcr.relay.levels.history import KEEP, LevelHistory
from crcr.relay.levels.standing import EPISODE, Episode
from crcr.stores.state import StateStore

opener = harness.opener
START = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)


@pytest.fixture
async def store(opener: StoreOpener) -> AsyncIterator[StateStore]:
    """A fresh state store on each backend."""
    opened = await opener.open()
    yield opened
    await opened.close()


class EpisodeReads:
    """The store, counting how often every episode is read (the cost that grew with N²)."""

    def __init__(self, store: StateStore) -> None:
        self._store = store
        self.reads = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def governance(self, kind: str) -> dict[str, dict[str, Any]]:
        self.reads += kind == EPISODE
        return await self._store.governance(kind)


def allowlist_of(level: str, count: int) -> str:
    return f"{level}:\n" + "".join(f"  - org/backend{i}\n" for i in range(count))


async def test_a_first_pass_over_many_backends_reads_the_episodes_once(
    store: StateStore,
) -> None:
    counted = EpisodeReads(store)
    history = LevelHistory(counted)

    await history.follow_levels(parse_allowlist(allowlist_of("L2", 200)), START)

    assert counted.reads == 1
    episodes = await history.episodes()
    assert len(episodes) == 200
    assert episodes["org/backend7"] == (Episode("org/backend7", "level", START, None, "L2"),)


async def test_a_pass_with_nothing_changed_reads_no_episode(store: StateStore) -> None:
    counted = EpisodeReads(store)
    history = LevelHistory(counted)
    allowlist = parse_allowlist(allowlist_of("L2", 3))
    await history.follow_levels(allowlist, START)
    counted.reads = 0

    await history.follow_levels(allowlist, START + timedelta(hours=1))

    assert counted.reads == 0


async def test_a_changed_level_closes_its_episode_and_a_gone_backend_ends_its_own(
    store: StateStore,
) -> None:
    history = LevelHistory(store)
    await history.follow_levels(parse_allowlist("L2:\n  - org/a\n  - org/b\n"), START)
    later = START + timedelta(days=3)

    await history.follow_levels(parse_allowlist("L3:\n  xpu:\n    org/a: []\n"), later)

    episodes = await history.episodes()
    assert episodes["org/a"] == (
        Episode("org/a", "level", START, later, "L2"),
        Episode("org/a", "level", later, None, "L3"),
    )
    assert episodes["org/b"] == (Episode("org/b", "level", START, later, "L2"),)


async def test_only_the_newest_episodes_are_kept(store: StateStore) -> None:
    history = LevelHistory(store)
    starts = [START + timedelta(days=day) for day in range(KEEP + 2)]
    for start in starts:
        await history.open("org/flappy", "demotion", start, "L4 → L3")

    kept = (await history.episodes())["org/flappy"]

    assert [episode.start for episode in kept] == starts[2:]
    assert all(episode.end is not None for episode in kept[:-1]) and kept[-1].end is None

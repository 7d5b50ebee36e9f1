"""The demo's decline: the L4 backend's maintainers close its demotion pull request unmerged."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

from crcr.demo.backends import DEMO_UPSTREAM
from crcr.demo.levels import DECLINING_BACKEND, MAINTAINER, decline_when_proposed
from crcr.demo.traffic import UpstreamEvent
from crcr.relay.allowlist.model import Level
from crcr.relay.levels.book import DemotionBook
from crcr.relay.levels.demotion import Demotion
from crcr.relay.levels.governance import LevelGovernance
from crcr.relay.levels.proposals import branch_for
from crcr.sandbox.github_state import SandboxGitHub
from crcr.stores.sqlite.state import SqliteStateStore


async def test_the_demotion_pull_request_is_closed_and_the_relay_declines_it(
    tmp_path: Path,
) -> None:
    github = SandboxGitHub()
    branch = branch_for(DECLINING_BACKEND, demotion=True)
    github.add_pull(DEMO_UPSTREAM, 7, head_sha="a" * 40, head="feature")  # upstream traffic
    github.add_pull(DEMO_UPSTREAM, 8, head_sha="b" * 40, head=branch, title="[CRCR] Demote")
    store = await SqliteStateStore.open(tmp_path / "state.db")
    book = DemotionBook(store, cache_seconds=0)
    demotion = Demotion(DECLINING_BACKEND, datetime.now(UTC), Level.L4)
    await store.add_demotion(DECLINING_BACKEND, demotion.to_store())
    governance = LevelGovernance(book, snooze_seconds=3600, allowlist_repo=DEMO_UPSTREAM)
    sent: list[UpstreamEvent] = []

    async def deliver(event: UpstreamEvent) -> None:
        sent.append(event)
        await governance.pull_request_seen(event.payload)  # what the relay's webhook does

    try:
        await asyncio.wait_for(decline_when_proposed(github, deliver, every=0.01), 10)
        found = await book.governance()
    finally:
        await store.close()

    assert [(p["number"], p["state"]) for p in github.pulls(DEMO_UPSTREAM)] == [
        (7, "open"),
        (8, "closed"),
    ]
    (event,) = sent
    assert (event.payload["action"], event.payload["pull_request"]["merged"]) == ("closed", False)
    assert event.payload["sender"]["login"] == MAINTAINER
    assert DECLINING_BACKEND.lower() not in found.demotions
    assert found.declines[DECLINING_BACKEND.lower()].by == MAINTAINER

"""Declines, overrides and the level history, one rule at a time (SPEC §10.2)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import StoreOpener

from crcr.relay.allowlist.model import Level, parse_allowlist
from crcr.relay.levels.book import DemotionBook
from crcr.relay.levels.governance import LevelGovernance, OverrideRefused
from crcr.relay.levels.standing import Override, treated_as
from crcr.relay.levels.status import BackendStatus
from crcr.stores.state import StateStore

opener = harness.opener
ALLOWLIST = parse_allowlist("L3:\n  xpu:\n    Org/XPU: []\nL4:\n  - org/critical\n")
UPSTREAM = "pytorch/pytorch"
START = datetime(2026, 11, 25, 10, 0, tzinfo=UTC)


class Clock:
    """The books' time, moved by the test."""

    def __init__(self) -> None:
        self.at = START

    def __call__(self) -> datetime:
        return self.at


@pytest.fixture
async def store(opener: StoreOpener) -> AsyncIterator[StateStore]:
    opened = await opener.open()
    yield opened
    await opened.close()


def demote(repo: str, level: Level) -> dict[str, BackendStatus]:
    return {repo.lower(): BackendStatus(repo, level, "demote", False, 7, ())}


def closed(
    branch: str, *, merged: bool = False, sender: str = "User", where: str = UPSTREAM
) -> dict[str, Any]:
    return {
        "action": "closed",
        "repository": {"full_name": where},
        "sender": {"login": "maintainer", "type": sender},
        "pull_request": {
            "merged": merged,
            "head": {"ref": branch},
            "html_url": f"https://github.com/{UPSTREAM}/pull/7",
        },
    }


def test_the_level_treated_at_is_the_lower_of_a_demotion_and_an_override() -> None:
    override = Override("o/r", Level.L2, START + timedelta(days=1), "why", "ops", START)
    assert treated_as(Level.L4, None, None, START) == Level.L4
    assert treated_as(Level.L4, Level.L4, None, START) == Level.L3
    assert treated_as(Level.L4, Level.L3, None, START) == Level.L4  # an older level's demotion
    assert treated_as(Level.L4, Level.L4, override, START) == Level.L2
    assert treated_as(Level.L3, None, override, START + timedelta(days=2)) == Level.L3  # expired


@pytest.mark.parametrize(
    ("payload", "declines"),
    [
        (closed("crcr-demotion/Org/XPU"), True),
        (closed("crcr-demotion/Org/XPU", merged=True), False),  # merged: the allowlist changes
        (closed("crcr-demotion/Org/XPU", sender="Bot"), False),  # crcr closing it itself
        (closed("crcr-demotion/Org/XPU", where="someone/fork"), False),
        (closed("crcr-promotion/Org/XPU"), False),
        (closed("feature-branch"), False),
    ],
)
async def test_only_a_person_closing_a_demotion_pull_request_unmerged_declines_it(
    store: StateStore, payload: dict[str, Any], declines: bool
) -> None:
    clock = Clock()
    book = DemotionBook(store, now=clock)
    await book.refresh(demote("Org/XPU", Level.L3), ALLOWLIST)
    governance = LevelGovernance(book, snooze_seconds=3600, allowlist_repo=UPSTREAM)

    await governance.pull_request_seen(payload)

    assert (await book.current() == {}) is declines
    declined = (await book.governance()).declined("org/xpu", clock.at)
    assert (declined is not None) is declines


async def test_a_declined_backend_is_not_demoted_again_until_the_snooze_ends(
    store: StateStore,
) -> None:
    clock = Clock()
    book = DemotionBook(store, now=clock)
    audit: list[dict[str, Any]] = []
    governance = LevelGovernance(book, snooze_seconds=3600, audit=audit.append)
    verdicts = demote("Org/XPU", Level.L3)
    await book.refresh(verdicts, ALLOWLIST)

    decline = await governance.decline("org/xpu", "maintainer")

    assert decline is not None and decline.until == START + timedelta(hours=1)
    assert await book.current() == {}
    assert [(e["kind"], e["decision"], e["subject"]) for e in audit] == [
        ("level", "declined", "maintainer")
    ]
    clock.at += timedelta(minutes=59)
    await book.refresh(verdicts, ALLOWLIST)
    assert await book.current() == {}
    clock.at += timedelta(minutes=2)
    await book.refresh(verdicts, ALLOWLIST)
    assert list(await book.current()) == ["org/xpu"]
    assert await governance.decline("org/none", "maintainer") is None  # nothing to decline


async def test_the_history_keeps_each_episode_with_its_start_and_end(store: StateStore) -> None:
    clock = Clock()
    book = DemotionBook(store, now=clock)
    governance = LevelGovernance(book, snooze_seconds=3600)
    await book.refresh(demote("Org/XPU", Level.L3), ALLOWLIST)
    clock.at += timedelta(hours=1)
    await book.refresh({}, parse_allowlist("L2:\n  - Org/XPU\nL4:\n  - org/critical\n"))
    await governance.set_override(
        parse_allowlist("L4:\n  - org/critical\n"),
        "org/critical",
        Level.L3,
        timedelta(days=1),
        "maintenance",
        "ops",
    )

    episodes = await book.history.episodes()

    xpu = [(e.kind, e.detail, e.start, e.end) for e in episodes["org/xpu"]]
    later = START + timedelta(hours=1)
    assert xpu == [
        ("level", "L3", START, later),
        ("demotion", "L3 → L2", START, later),  # the allowlist changed: it ended
        ("level", "L2", later, None),
    ]
    (override,) = [e for e in episodes["org/critical"] if e.kind == "override"]
    assert (override.start, override.end) == (later, later + timedelta(days=1))


@pytest.mark.parametrize(
    ("repo", "level", "duration", "reason", "message"),
    [
        ("org/none", Level.L2, timedelta(days=1), "x", "org/none is not in the allowlist"),
        ("org/xpu", Level.L3, timedelta(days=1), "x", "Org/XPU is at L3: an override only lowers"),
        ("org/critical", Level.L1, timedelta(days=1), "x", "an override sets L2"),
        ("org/critical", Level.L2, timedelta(0), "x", "must last a while"),
        ("org/critical", Level.L2, timedelta(days=1), " ", "say why"),
    ],
)
async def test_an_override_that_would_not_lower_or_has_no_reason_is_refused(
    store: StateStore,
    repo: str,
    level: Level,
    duration: timedelta,
    reason: str,
    message: str,
) -> None:
    governance = LevelGovernance(DemotionBook(store), snooze_seconds=60)
    with pytest.raises(OverrideRefused, match=message):
        await governance.set_override(ALLOWLIST, repo, level, duration, reason, "ops")

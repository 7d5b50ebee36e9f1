"""The sweeper's level step: verdicts in, demotions out; a silent HUD changes nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from crcr.relay.allowlist.model import Allowlist, parse_allowlist
from crcr.relay.levels.book import DemotionBook
from crcr.relay.levels.refresh import LevelRefresh
from crcr.relay.levels.status import LevelStatusError
from crcr.stores.sqlite.state import SqliteStateStore

ALLOWLIST = parse_allowlist("L3:\n  xpu:\n    org/xpu: []\n")
DEMOTE = {
    "generated_at": "2026-11-25T10:00:00Z",
    "repos": [{"repo": "org/xpu", "level": "L3", "change": "demote", "noData": False,
               "windowDays": 7, "criteria": [], "demoted": None}],
}  # fmt: skip


class Verdicts:
    """What the HUD answers, set by the test; `None` stands for a HUD that is down."""

    def __init__(self) -> None:
        self.document: Mapping[str, Any] | None = DEMOTE

    async def __call__(self) -> Mapping[str, Any]:
        if self.document is None:
            raise LevelStatusError("level status from http://hud: HTTP 503")
        return self.document


async def allowlist() -> Allowlist:
    return ALLOWLIST


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStateStore]:
    opened = await SqliteStateStore.open(tmp_path / "state.db")
    yield opened
    await opened.close()


async def test_a_hud_that_cannot_answer_leaves_the_demotions_as_they_are(
    store: SqliteStateStore, caplog: pytest.LogCaptureFixture
) -> None:
    verdicts = Verdicts()
    book = DemotionBook(store, cache_seconds=0)
    refresh = LevelRefresh(store, book, verdicts, allowlist, sync=None, sync_interval=3600)
    await refresh()
    assert list(await book.current()) == ["org/xpu"]

    verdicts.document = None
    await refresh()
    assert list(await book.current()) == ["org/xpu"]
    assert "demotions left as they are: level status from http://hud: HTTP 503" in caplog.text

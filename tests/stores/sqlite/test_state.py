"""What only the SQLite store promises: exactly-once across processes sharing a file."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from crcr.stores.sqlite.state import SqliteStateStore
from crcr.stores.state import StateStoreUnavailable

PROCESSES = 4
QUEUED_ITEMS = 30
CONTENDER = Path(__file__).with_name("contender.py")


async def _start_contender(path: Path) -> asyncio.subprocess.Process:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(CONTENDER),
        str(path),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), timeout=30)
    assert line == b"ready\n"
    return process


async def _outcome(process: asyncio.subprocess.Process) -> dict[str, Any]:
    stdout, _ = await asyncio.wait_for(process.communicate(b"go\n"), timeout=60)
    assert process.returncode == 0
    outcome: dict[str, Any] = json.loads(stdout)
    return outcome


async def test_processes_sharing_the_file_get_exactly_once_semantics(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = await SqliteStateStore.open(path)
    for index in range(QUEUED_ITEMS):
        await store.enqueue("hud", f"item-{index}", {"i": index})
    await store.close()

    # Every worker has opened the file before any starts: a start line on stdin each.
    processes = await asyncio.gather(*(_start_contender(path) for _ in range(PROCESSES)))
    outcomes = await asyncio.gather(*(_outcome(process) for process in processes))

    assert sum(outcome["applied"] for outcome in outcomes) == 1
    assert sum(outcome["allowed"] for outcome in outcomes) == 30
    leased = [item for outcome in outcomes for item in outcome["leased"]]
    assert sorted(leased) == sorted(f"item-{index}" for index in range(QUEUED_ITEMS))


async def test_a_file_that_cannot_be_opened_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(StateStoreUnavailable, match="unable to open"):
        await SqliteStateStore.open(tmp_path / "missing-dir" / "state.db")


async def test_a_write_lock_held_too_long_makes_writes_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = await SqliteStateStore.open(path, busy_timeout=0.2)
    other_process = sqlite3.connect(path, isolation_level=None)
    try:
        other_process.execute("BEGIN IMMEDIATE")
        with pytest.raises(StateStoreUnavailable, match="locked"):
            await store.claim_once("delivery", 60)
        assert await store.get_job("job") is None  # readers are not blocked under WAL
        other_process.execute("ROLLBACK")
        assert await store.claim_once("delivery", 60) is True
    finally:
        other_process.close()
        await store.close()

"""Concurrent writes to the SQLite state store share a commit, and lose nothing by it."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from crcr.stores.sqlite.db import SqliteDatabase
from crcr.stores.sqlite.group_commit import GroupCommit, Work
from crcr.stores.values import StateStoreUnavailable


class CountedCommits:
    """A database's `commit_together`, with the size of each batch it was handed."""

    def __init__(self, database: SqliteDatabase) -> None:
        self.database = database
        self.batches: list[int] = []

    async def __call__(self, works: Sequence[Work]) -> list[object]:
        self.batches.append(len(works))
        return await self.database.commit_together(works)


@pytest.fixture
async def database(tmp_path: Path) -> AsyncIterator[SqliteDatabase]:
    database = SqliteDatabase(tmp_path / "state.db")
    await database.open()
    await database.write(lambda conn, now: conn.execute("CREATE TABLE rows (n INTEGER)"))
    yield database
    await database.close()


def insert(n: int) -> Work:
    def work(conn: sqlite3.Connection, now: float) -> int:
        conn.execute("INSERT INTO rows VALUES (?)", (n,))
        return n

    return work


async def stored(database: SqliteDatabase) -> list[int]:
    rows = await database.read(lambda conn, now: conn.execute("SELECT n FROM rows").fetchall())
    return sorted(n for (n,) in rows)


def held_open(release: threading.Event, started: threading.Event | None = None) -> Work:
    """A write that holds its batch's transaction open until `release` is set."""

    def work(conn: sqlite3.Connection, now: float) -> None:
        if started is not None:
            started.set()
        release.wait(timeout=30)

    return work


async def test_writes_queued_during_a_commit_share_the_next_one(database: SqliteDatabase) -> None:
    commits = CountedCommits(database)
    group = GroupCommit(commits)
    release, started = threading.Event(), threading.Event()

    first = asyncio.ensure_future(group.write(held_open(release, started)))
    await asyncio.to_thread(started.wait, 30)  # the first batch is being written
    rest = asyncio.gather(*(group.write(insert(n)) for n in range(20)))
    # Runs once the writes above have queued (the loop runs ready callbacks in order).
    asyncio.get_running_loop().call_soon(release.set)
    await first

    assert await rest == list(range(20))  # each caller its own result
    assert commits.batches == [1, 20]
    assert await stored(database) == list(range(20))


async def test_a_write_that_raises_is_rolled_back_alone(database: SqliteDatabase) -> None:
    def insert_then_fail(conn: sqlite3.Connection, now: float) -> None:
        conn.execute("INSERT INTO rows VALUES (99)")
        raise ValueError("refused")

    commits = CountedCommits(database)
    group = GroupCommit(commits)
    outcomes = await asyncio.gather(
        group.write(insert(1)),
        group.write(insert_then_fail),
        group.write(insert(2)),
        return_exceptions=True,
    )

    assert outcomes[0] == 1 and outcomes[2] == 2
    assert isinstance(outcomes[1], ValueError)
    assert commits.batches == [3]
    assert await stored(database) == [1, 2]


async def test_a_caller_that_gave_up_before_its_batch_began_writes_nothing(
    database: SqliteDatabase,
) -> None:
    group = GroupCommit(database.commit_together)
    release = threading.Event()
    first = asyncio.ensure_future(group.write(held_open(release)))
    kept = asyncio.ensure_future(group.write(insert(1)))
    given_up = asyncio.ensure_future(group.write(insert(2)))
    await asyncio.sleep(0)  # one turn: both writes queue behind the open batch
    given_up.cancel()
    release.set()

    await first
    assert await kept == 1
    assert given_up.cancelled()
    assert await stored(database) == [1]


async def test_a_batch_whose_commit_fails_fails_each_of_its_callers() -> None:
    async def unavailable(works: Sequence[Work]) -> list[Any]:
        raise StateStoreUnavailable("disk I/O error")

    group = GroupCommit(unavailable)
    outcomes = await asyncio.gather(
        group.write(insert(1)), group.write(insert(2)), return_exceptions=True
    )

    assert all(isinstance(outcome, StateStoreUnavailable) for outcome in outcomes)


async def test_the_store_answers_a_failing_statement_unavailable(database: SqliteDatabase) -> None:
    with pytest.raises(StateStoreUnavailable, match="no such table"):
        await database.write(lambda conn, now: conn.execute("INSERT INTO missing VALUES (1)"))
    assert await database.write(insert(3)) == 3  # the next write is not held up by it

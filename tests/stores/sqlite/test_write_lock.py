"""The SQLite writer lock: exclusive across threads and processes, waiters woken at once."""

from __future__ import annotations

import asyncio
import fcntl
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from crcr.stores.sqlite.write_lock import SqliteWriteLock

INCREMENTS = 200


# A read-modify-write of a plain file that loses updates unless the lock is exclusive.
INCREMENTER = f"""
import sys
from pathlib import Path
from crcr.stores.sqlite.write_lock import SqliteWriteLock
lock, counter = SqliteWriteLock(Path(sys.argv[1])), Path(sys.argv[2])
for _ in range({INCREMENTS}):
    with lock.held():
        counter.write_text(str(int(counter.read_text()) + 1))
"""


def test_processes_never_hold_it_together(tmp_path: Path) -> None:
    counter = tmp_path / "counter"
    counter.write_text("0")
    command = [sys.executable, "-c", INCREMENTER, str(tmp_path / "hud.db"), str(counter)]
    workers = [subprocess.Popen(command) for _ in range(4)]
    for worker in workers:
        assert worker.wait(timeout=60) == 0
    assert int(counter.read_text()) == 4 * INCREMENTS


@pytest.mark.parametrize("database", ["hud.db", None], ids=["file", "in-memory"])
def test_threads_of_one_process_share_one_lock(tmp_path: Path, database: str | None) -> None:
    counter = tmp_path / "counter"
    counter.write_text("0")
    lock = SqliteWriteLock(None if database is None else tmp_path / database)

    def increment() -> None:
        for _ in range(INCREMENTS):
            with lock.held():
                counter.write_text(str(int(counter.read_text()) + 1))

    threads = [threading.Thread(target=increment) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert int(counter.read_text()) == 4 * INCREMENTS


def test_the_lock_file_sits_beside_the_database(tmp_path: Path) -> None:
    with SqliteWriteLock(tmp_path / "hud.db").held():
        assert (tmp_path / "hud.db.lock").exists()


async def test_the_event_loop_takes_a_free_lock_at_once(tmp_path: Path) -> None:
    lock = SqliteWriteLock(tmp_path / "hud.db")

    async with lock.held_async():
        assert not another_process_could_take(tmp_path / "hud.db.lock")
    assert another_process_could_take(tmp_path / "hud.db.lock")


def another_process_could_take(lock_file: Path) -> bool:
    """Try the advisory lock through a descriptor of our own, as another process would."""
    descriptor = os.open(lock_file, os.O_RDWR)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(descriptor)  # closing the descriptor also lets go of a lock it took
    return True


async def test_the_event_loop_waits_for_a_held_lock_without_blocking(tmp_path: Path) -> None:
    lock = SqliteWriteLock(tmp_path / "hud.db")

    with held_by_another_thread(lock):
        waiter = asyncio.create_task(_enter_and_leave(lock))
        await asyncio.sleep(0)  # the waiter is now waiting, in a thread of its own
        assert not waiter.done()  # and the loop still runs this test

    await asyncio.wait_for(waiter, timeout=30)


async def test_a_waiter_that_gives_up_leaves_the_lock_free(tmp_path: Path) -> None:
    lock = SqliteWriteLock(tmp_path / "hud.db")

    with held_by_another_thread(lock):
        waiter = asyncio.create_task(_enter_and_leave(lock))
        await asyncio.sleep(0)
        waiter.cancel()

    # The abandoned attempt gets the lock in its thread and gives it straight back.
    await asyncio.wait_for(_enter_and_leave(lock), timeout=30)
    assert waiter.cancelled()


@contextmanager
def held_by_another_thread(lock: SqliteWriteLock) -> Iterator[None]:
    """The lock held by a thread of this process until the block ends."""
    holder_has_it, let_go = threading.Event(), threading.Event()

    def hold() -> None:
        with lock.held():
            holder_has_it.set()
            let_go.wait(timeout=30)

    holder = threading.Thread(target=hold)
    holder.start()
    holder_has_it.wait(timeout=30)
    try:
        yield
    finally:
        let_go.set()
        holder.join()


async def _enter_and_leave(lock: SqliteWriteLock) -> None:
    async with lock.held_async():
        pass

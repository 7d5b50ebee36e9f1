"""The SQLite writer lock: exclusive across threads and processes, waiters woken at once."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from crcr.stores.sqlite_write_lock import SqliteWriteLock

INCREMENTS = 200


# A read-modify-write of a plain file that loses updates unless the lock is exclusive.
INCREMENTER = f"""
import sys
from pathlib import Path
from crcr.stores.sqlite_write_lock import SqliteWriteLock
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


def test_threads_of_one_process_share_one_lock(tmp_path: Path) -> None:
    counter = tmp_path / "counter"
    counter.write_text("0")
    lock = SqliteWriteLock(tmp_path / "hud.db")

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


def test_an_in_memory_database_needs_no_file(tmp_path: Path) -> None:
    with SqliteWriteLock(None).held():
        pass
    assert list(tmp_path.iterdir()) == []

"""The SQLite state file carries a schema version: older files are upgraded, newer refused."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from crcr.stores.schema import SQLITE_STATE_SCHEMA, SchemaTooNew
from crcr.stores.sqlite.state import SqliteStateStore
from crcr.stores.state import JobRecord

# The file as crcr wrote it before versions existed (`PRAGMA user_version` 0).
UNVERSIONED_LAYOUT = """
CREATE TABLE records (kind TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
    expires_at REAL NOT NULL, PRIMARY KEY (kind, key)) WITHOUT ROWID;
CREATE INDEX records_by_expiry ON records (expires_at);
CREATE TABLE rate_hits (key TEXT NOT NULL, at REAL NOT NULL, expires_at REAL NOT NULL);
CREATE INDEX rate_hits_by_key ON rate_hits (key, at);
CREATE INDEX rate_hits_by_expiry ON rate_hits (expires_at);
CREATE TABLE queue_items (queue TEXT NOT NULL, item_id TEXT NOT NULL, payload TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0, enqueued_at REAL NOT NULL, ready_at REAL NOT NULL,
    lease_token TEXT, PRIMARY KEY (queue, item_id));
CREATE INDEX queue_items_by_ready ON queue_items (queue, ready_at);
CREATE TABLE deadlines (job_key TEXT PRIMARY KEY, deadline REAL NOT NULL);
CREATE INDEX deadlines_by_time ON deadlines (deadline);
"""


def _user_version(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])


async def test_an_unversioned_file_is_upgraded_in_place_with_its_data(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    now = time.time()
    with sqlite3.connect(path) as conn:
        conn.executescript(UNVERSIONED_LAYOUT)
        conn.execute(
            "INSERT INTO records VALUES ('job', 'd1:org/r:1:1:build', ?, ?)",
            ('{"state":"in_progress","data":{"in_progress_at":12.5}}', now + 3600),
        )
        conn.execute("INSERT INTO deadlines VALUES ('d1:org/r:1:1:build', 1000.0)")
        conn.execute(
            "INSERT INTO queue_items VALUES ('hud', 'item-1', '{\"n\":1}', 2, ?, 0, NULL)",
            (now - 5,),
        )
    assert _user_version(path) == 0

    store = await SqliteStateStore.open(path)
    try:
        assert _user_version(path) == SQLITE_STATE_SCHEMA
        job = await store.get_job("d1:org/r:1:1:build")
        assert job == JobRecord("in_progress", {"in_progress_at": 12.5})
        assert await store.overdue(1000.0) == ["d1:org/r:1:1:build"]
        (item,) = await store.lease("hud", lease_seconds=30)
        assert (item.item_id, dict(item.payload), item.attempts) == ("item-1", {"n": 1}, 2)
    finally:
        await store.close()


async def test_a_new_file_is_stamped_with_this_version(tmp_path: Path) -> None:
    store = await SqliteStateStore.open(tmp_path / "state.db")
    await store.close()
    assert _user_version(tmp_path / "state.db") == SQLITE_STATE_SCHEMA


async def test_a_file_of_a_newer_crcr_is_refused_naming_both_versions(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE future (x)")
        conn.execute(f"PRAGMA user_version = {SQLITE_STATE_SCHEMA + 1}")

    with pytest.raises(SchemaTooNew) as refused:
        await SqliteStateStore.open(path)

    message = str(refused.value)
    assert message.startswith(f"SQLite state store {path}: ")
    assert f"schema version {SQLITE_STATE_SCHEMA + 1}, written by a newer crcr" in message
    assert f"reads schema version {SQLITE_STATE_SCHEMA} at most" in message
    with sqlite3.connect(path) as conn:  # untouched: no table of this crcr's added
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert tables == {"future"}

"""WAL checkpoints of the SQLite results store run off the write path, every few batches."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from tests.hud.hud_bodies import our_body

from crcr.hud.db import checkpoint_wal, create_results_engine, migrate
from crcr.hud.write import sqlite_writer
from crcr.hud.write.ingest import HudIngestor


def rows_in_database_file(path: Path) -> int:
    """Jobs in the main database file alone, ignoring whatever the WAL still holds."""
    with sqlite3.connect(f"file:{path}?immutable=1", uri=True) as connection:
        count: int = connection.execute("SELECT count(*) FROM hud_jobs").fetchone()[0]
    return count


async def ingest_one_by_one(ingestor: HudIngestor, count: int) -> None:
    for run in range(count):
        await ingestor.ingest(our_body(run_id=str(1000 + run)))


async def test_with_manual_checkpoints_writes_stay_in_the_wal(tmp_path: Path) -> None:
    engine = create_results_engine(f"sqlite:///{tmp_path / 'hud.db'}", manual_checkpoints=True)
    migrate(engine)
    checkpoint_wal(engine)  # the schema is in the file

    await ingest_one_by_one(HudIngestor(engine), sqlite_writer.CHECKPOINT_EVERY - 1)

    assert rows_in_database_file(tmp_path / "hud.db") == 0
    checkpoint_wal(engine)
    assert rows_in_database_file(tmp_path / "hud.db") == sqlite_writer.CHECKPOINT_EVERY - 1
    engine.dispose()


async def test_the_ingestor_checkpoints_after_enough_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_writer, "CHECKPOINT_EVERY", 3)
    engine = create_results_engine(f"sqlite:///{tmp_path / 'hud.db'}", manual_checkpoints=True)
    migrate(engine)
    checkpoint_wal(engine)
    ingestor = HudIngestor(engine)

    await ingest_one_by_one(ingestor, 3)
    await ingestor.close()  # waits for the checkpoint it started

    assert rows_in_database_file(tmp_path / "hud.db") == 3
    engine.dispose()

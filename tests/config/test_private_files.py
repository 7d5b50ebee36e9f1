"""The embedded stores' files are their owner's alone: 0600 files in a 0700 directory."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy import text

from crcr.config.settings import load_settings
from crcr.hud.db import create_results_engine, migrate
from crcr.stores.factory import open_state_store


def mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


async def test_the_state_store_keeps_its_tokens_from_other_accounts(tmp_path: Path) -> None:
    data = tmp_path / "crcr-data"
    data.mkdir(mode=0o755)
    store = await open_state_store(load_settings(data_dir=data))
    try:
        await store.cache_set("tokens", "installation", "ghs_secret", 60)
    finally:
        await store.close()

    assert mode(data) == 0o700
    files = sorted(data.iterdir())
    assert data / "state.db" in files
    for path in files:
        if path.name.startswith("state.db"):
            assert mode(path) == 0o600, path


def test_the_results_store_file_is_private_too(tmp_path: Path) -> None:
    path = tmp_path / "new-dir" / "hud.db"
    engine = create_results_engine(f"sqlite:///{path}")
    try:
        migrate(engine)
        with engine.connect() as connection:
            level = connection.execute(text("PRAGMA synchronous")).scalar()
    finally:
        engine.dispose()

    assert mode(path.parent) == 0o700
    assert mode(path) == 0o600
    assert level == 2  # FULL: an acknowledged row survives an OS crash


async def test_the_state_store_commits_with_full_durability(tmp_path: Path) -> None:
    store = await open_state_store(load_settings(data_dir=tmp_path))
    try:
        level = await store._db.read(  # type: ignore[attr-defined]
            lambda conn, now: conn.execute("PRAGMA synchronous").fetchone()[0]
        )
    finally:
        await store.close()

    assert level == 2  # FULL
    assert isinstance(sqlite3.sqlite_version, str)

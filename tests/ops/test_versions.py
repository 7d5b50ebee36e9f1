"""`crcr version` names the package and schema versions; data of a newer crcr stops start-up."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.cli.test_cli import crcr

from crcr import __version__
from crcr.config.settings import Settings
from crcr.ops.versions import check_stores, describe_versions, results_head
from crcr.stores.schema import REDIS_STATE_SCHEMA, SQLITE_STATE_SCHEMA
from crcr.stores.sqlite.state import SqliteStateStore


def test_the_code_versions_need_no_settings() -> None:
    assert describe_versions().splitlines() == [
        f"crcr {__version__}",
        f"schema versions this crcr writes: state store SQLite {SQLITE_STATE_SCHEMA},"
        f" Redis {REDIS_STATE_SCHEMA}; results store {results_head()}",
    ]


def test_crcr_version_reads_the_data_without_creating_any(tmp_path: Path) -> None:
    result = crcr("version", CRCR_DATA_DIR=str(tmp_path))

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == describe_versions().splitlines()
    assert lines[2:] == [
        f"state store (SQLite {tmp_path / 'state.db'}): no data yet",
        f"results store (sqlite:///{tmp_path / 'hud.db'}): no data yet",
    ]
    assert list(tmp_path.iterdir()) == []


async def test_crcr_version_shows_the_versions_of_upgraded_data(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    await (await SqliteStateStore.open(settings.state_database_path)).close()
    check_stores(settings, state=False)  # the results store migrated as at start-up

    lines = describe_versions(settings).splitlines()

    assert lines[2:] == [
        f"state store (SQLite {tmp_path / 'state.db'}): schema {SQLITE_STATE_SCHEMA}",
        f"results store (sqlite:///{tmp_path / 'hud.db'}): revision {results_head()}",
    ]


def test_an_unreachable_redis_is_named_not_a_traceback(tmp_path: Path) -> None:
    settings = Settings(redis_url="redis://127.0.0.1:1/0", data_dir=tmp_path)
    assert describe_versions(settings).splitlines()[2] == (
        "state store (Redis redis://127.0.0.1:1/0): unreachable"
    )


def test_serve_refuses_data_of_a_newer_crcr_with_one_line(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "state.db") as conn:
        conn.execute(f"PRAGMA user_version = {SQLITE_STATE_SCHEMA + 1}")
    serving = {
        "CRCR_DATA_DIR": str(tmp_path),
        "CRCR_WEBHOOK_SECRET": "secret",
        "CRCR_GITHUB_APP_ID": "1",
        "CRCR_GITHUB_APP_PRIVATE_KEY": "-----BEGIN RSA PRIVATE KEY-----\\nx",
        "CRCR_ALLOWLIST": str(tmp_path / "allowlist.yml"),
        "CRCR_PORT": "1",  # never reached
    }

    result = crcr("serve", "--port", "1", **serving)

    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"crcr serve: SQLite state store {tmp_path / 'state.db'}: its data has schema version"
        f" {SQLITE_STATE_SCHEMA + 1}, written by a newer crcr; this crcr ({__version__}) reads"
        f" schema version {SQLITE_STATE_SCHEMA} at most. Run the newer crcr, or restore the"
        " backup taken before it upgraded the data."
    ]

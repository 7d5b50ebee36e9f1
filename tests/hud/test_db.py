"""The results store's connection and migrations: URLs, SQLite set-up, schema = models."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, inspect, text
from sqlalchemy.exc import OperationalError
from tests.postgres_schema import private_schema

from crcr.config.settings import SettingsError
from crcr.hud.db import create_results_engine, migrate, normalise_url, write_transaction
from crcr.hud.models import Base
from crcr.stores.schema import SchemaTooNew


def test_plain_postgresql_urls_use_psycopg_3() -> None:
    assert normalise_url("postgresql://u@h/db") == "postgresql+psycopg://u@h/db"
    assert normalise_url("postgres://u@h/db") == "postgresql+psycopg://u@h/db"
    assert normalise_url("sqlite:///x.db") == "sqlite:///x.db"


def test_sqlite_gets_its_directory_and_write_ahead_logging(tmp_path: Path) -> None:
    engine = create_results_engine(f"sqlite:///{tmp_path / 'nested' / 'dir' / 'hud.db'}")
    try:
        with engine.connect() as connection:
            mode = connection.execute(text("PRAGMA journal_mode")).scalar()
        assert mode == "wal"
        assert (tmp_path / "nested" / "dir" / "hud.db").exists()
    finally:
        engine.dispose()


def test_the_migrated_schema_matches_the_models(migrated_engine: Engine) -> None:
    with migrated_engine.connect() as connection:
        context = MigrationContext.configure(connection)
        differences = compare_metadata(context, Base.metadata)

    assert differences == []


def test_migrating_twice_is_a_no_op(migrated_engine: Engine) -> None:
    migrate(migrated_engine)

    tables = set(inspect(migrated_engine).get_table_names())
    assert {"hud_jobs", "hud_rollup_daily", "hud_latency_buckets"} <= tables


MIGRATE = """
import sys
from crcr.hud.db import create_results_engine, migrate
migrate(create_results_engine(sys.argv[1]))
"""


def test_workers_starting_together_on_a_new_sqlite_file_all_migrate(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'hud.db'}"
    starts = [subprocess.Popen([sys.executable, "-c", MIGRATE, url]) for _ in range(4)]

    assert [start.wait(timeout=120) for start in starts] == [0, 0, 0, 0]
    engine = create_results_engine(url)
    with engine.connect() as connection:
        versions = connection.execute(text("SELECT count(*) FROM alembic_version")).scalar()
    engine.dispose()
    assert versions == 1


def test_postgresql_without_its_driver_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("crcr.hud.db.find_spec", lambda name: None)

    with pytest.raises(SettingsError, match=r"CRCR_DATABASE_URL: .*crcr\[postgres\]"):
        create_results_engine("postgresql://crcr@127.0.0.1:5432/hud")


# --- schema versions: older stores upgraded, newer refused ------------------------


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def empty_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty results store of this test's own: a new SQLite file or PostgreSQL schema."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'hud.db'}"
    else:
        with private_schema(request.getfixturevalue("postgres_url"), "hud") as url:
            yield url


def _alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", "crcr.hud:migrations")
    return config


def _revision(engine: Engine) -> set[str]:
    with engine.connect() as connection:
        return set(MigrationContext.configure(connection).get_current_heads())


def test_a_store_of_an_older_crcr_is_upgraded_to_the_newest_revision(
    empty_store_url: str,
) -> None:
    engine = create_results_engine(empty_store_url)
    try:
        with engine.begin() as connection:  # as the crcr that shipped revision 0001 left it
            config = _alembic_config()
            config.attributes["connection"] = connection
            command.upgrade(config, "0001")
        assert _revision(engine) == {"0001"}

        migrate(engine)

        head = ScriptDirectory.from_config(_alembic_config()).get_current_head()
        assert _revision(engine) == {head}
    finally:
        engine.dispose()


def test_a_store_of_a_newer_crcr_is_refused_naming_both_revisions(empty_store_url: str) -> None:
    engine = create_results_engine(empty_store_url)
    try:
        migrate(engine)
        with engine.begin() as connection:
            connection.execute(text("UPDATE alembic_version SET version_num = '0099'"))

        with pytest.raises(SchemaTooNew) as refused:
            migrate(engine)

        head = ScriptDirectory.from_config(_alembic_config()).get_current_head()
        message = str(refused.value)
        assert message.startswith("results store ")
        assert "schema version 0099, written by a newer crcr" in message
        assert f"reads schema version {head} at most" in message
        assert _revision(engine) == {"0099"}
    finally:
        engine.dispose()


def test_a_sqlite_write_that_cannot_begin_raises_sqlalchemys_error(tmp_path: Path) -> None:
    """BEGIN runs on the driver's connection (db._configure_sqlite); a busy database still
    surfaces as SQLAlchemy's OperationalError, which the readiness check and callers catch."""
    path = tmp_path / "hud.db"
    engine = create_results_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as connection:  # the pool's one idle connection, reused below
            connection.exec_driver_sql("PRAGMA busy_timeout=0")
        holder = sqlite3.connect(path, isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")
            busy = pytest.raises(OperationalError, match="database is locked")
            with busy, write_transaction(engine, locked=True):
                pass
            holder.execute("ROLLBACK")
        finally:
            holder.close()
        with write_transaction(engine, locked=True) as connection:
            assert connection.exec_driver_sql("SELECT 1").scalar() == 1
    finally:
        engine.dispose()

"""What `crcr version` (and `crcr --version`) prints, and the start-up check of stored data.

The package version alone does not tell an operator whether this crcr can run on the
data it is pointed at: each store's data carries a schema version (stores/schema.py),
upgraded at start-up and refused when newer. `describe_versions` shows both sides, the
versions this code writes and, where the settings point at stores, those of the data,
read without creating or upgrading anything.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer

from crcr import __version__
from crcr.config.settings import Settings, mask_url
from crcr.stores.schema import REDIS_STATE_SCHEMA, SQLITE_STATE_SCHEMA, SchemaTooNew


def results_head() -> str:
    """The newest results-store revision this crcr ships (Alembic's head)."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", "crcr.hud:migrations")
    return str(ScriptDirectory.from_config(config).get_current_head())


def describe_versions(settings: Settings | None = None) -> str:
    """The package version, the schema versions this code writes, and with `settings`
    the schema versions of the data in the stores they name (one line each).
    """
    lines = [
        f"crcr {__version__}",
        f"schema versions this crcr writes: state store SQLite {SQLITE_STATE_SCHEMA},"
        f" Redis {REDIS_STATE_SCHEMA}; results store {results_head()}",
    ]
    if settings is not None:
        lines += [_state_data(settings), _results_data(settings)]
    return "\n".join(lines)


def _state_data(settings: Settings) -> str:
    if settings.redis_url:
        where = f"Redis{' Cluster' if settings.redis_cluster else ''}"
        where += f" {mask_url(settings.redis_url)}"
        return f"state store ({where}): {asyncio.run(_redis_version(settings))}"
    path = settings.state_database_path
    if not path.is_file():
        return f"state store (SQLite {path}): no data yet"
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            found = int(conn.execute("PRAGMA user_version").fetchone()[0])
    except sqlite3.Error as exc:
        return f"state store (SQLite {path}): not readable: {exc}"
    stated = str(found) if found else "1 (written before versions, upgraded at start-up)"
    return f"state store (SQLite {path}): schema {stated}"


async def _redis_version(settings: Settings) -> str:
    from crcr.stores.redis.state import RedisStateStore
    from crcr.stores.state import StateStoreUnavailable

    assert settings.redis_url is not None
    store = RedisStateStore.from_url(settings.redis_url, cluster=settings.redis_cluster, timeout=2)
    try:
        found = await store.data_schema_version()
    except StateStoreUnavailable:
        return "unreachable"
    finally:
        await store.close()
    if found is None:
        return "no data yet"
    return f"schema {found}"


def _results_data(settings: Settings) -> str:
    if settings.hud_url:
        return f"results store: a remote HUD ({settings.hud_url}), not read"
    from alembic.migration import MigrationContext
    from sqlalchemy import create_engine, make_url
    from sqlalchemy.exc import SQLAlchemyError

    from crcr.hud.db import normalise_url

    url = normalise_url(settings.hud_database_url)
    shown = mask_url(settings.hud_database_url)
    database = make_url(url).database
    if url.startswith("sqlite") and not (database and Path(database).expanduser().is_file()):
        return f"results store ({shown}): no data yet"
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            heads = MigrationContext.configure(connection).get_current_heads()
    except (SQLAlchemyError, ImportError):
        return f"results store ({shown}): unreachable"
    finally:
        engine.dispose()
    return f"results store ({shown}): revision {', '.join(heads) or 'none (no data yet)'}"


def check_stores(settings: Settings, *, state: bool = True) -> None:
    """Upgrade the stores' data now, or raise `SchemaTooNew` for data of a newer crcr.

    For commands that serve (the stores are opened again by the server): run first, the
    refusal is one line and an exit instead of a failed server start. Any other problem
    is left for the server's own start to report, as it always has. `state=False`: the
    results store only (`crcr hud serve`).
    """
    from crcr.hud.db import create_results_engine, migrate
    from crcr.stores.factory import open_state_store

    async def open_and_close() -> None:
        store = await open_state_store(settings)
        await store.close()

    try:
        if state:
            asyncio.run(open_and_close())
        if not settings.hud_url:
            engine = create_results_engine(settings.hud_database_url)
            try:
                migrate(engine)
            finally:
                engine.dispose()
    except SchemaTooNew:
        raise
    except Exception:  # noqa: S110 - reported by the server's start, with its context
        pass


@contextmanager
def refusing_newer_data(command: str) -> Iterator[None]:
    """Turn `SchemaTooNew` into its one line on stderr and exit status 2."""
    try:
        yield
    except SchemaTooNew as exc:
        typer.echo(f"{command}: {exc}", err=True)
        raise typer.Exit(2) from None

"""Results-store fixtures: every store test runs on a real SQLite file and real PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, text
from tests.hud.store_tools import clear

from crcr.hud.db import create_results_engine, migrate


def _postgres_schema_url(base_url: str) -> Iterator[str]:
    """A private schema per test session, so concurrent runs never share tables."""
    schema = f"crcr_hud_{uuid.uuid4().hex[:12]}"
    admin = create_engine(base_url)
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        yield f"{base_url}?options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture(scope="session", params=["sqlite", "postgres"])
def store_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """URL of an empty results store: a SQLite file, or a private PostgreSQL schema."""
    if request.param == "sqlite":
        directory: Path = tmp_path_factory.mktemp("hud")
        yield f"sqlite:///{directory / 'data' / 'hud.db'}"
    else:
        yield from _postgres_schema_url(request.getfixturevalue("postgres_url"))


@pytest.fixture(scope="session")
def migrated_engine(store_url: str) -> Iterator[Engine]:
    """An engine on the store, migrated once per session."""
    engine = create_results_engine(store_url, pool_size=4)
    migrate(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def engine(migrated_engine: Engine) -> Engine:
    """A migrated, empty results store."""
    clear(migrated_engine)
    return migrated_engine

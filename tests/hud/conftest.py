"""Results-store fixtures: every store test runs on a real SQLite file and real PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine
from tests.hud.store_tools import clear
from tests.postgres_schema import private_schema

from crcr.hud.db import create_results_engine, migrate


@pytest.fixture(scope="session", params=["sqlite", "postgres"])
def store_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """URL of an empty results store: a SQLite file, or a private PostgreSQL schema."""
    if request.param == "sqlite":
        directory: Path = tmp_path_factory.mktemp("hud")
        yield f"sqlite:///{directory / 'data' / 'hud.db'}"
    else:
        with private_schema(request.getfixturevalue("postgres_url"), "hud") as url:
            yield url


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

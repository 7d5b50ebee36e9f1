"""Migration 0004 over existing results: an operator upgrading finds the level status filled."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, inspect
from tests.hud.levels.level_jobs import NOW, pr_job, write
from tests.hud.levels.test_store import status_of

from crcr.hud.db import migrate


def _move_to(engine: Engine, revision: str) -> None:
    config = Config()
    config.set_main_option("script_location", "crcr.hud:migrations")
    with engine.connect() as connection:
        config.attributes["connection"] = connection
        if revision == "head":
            command.upgrade(config, revision)
        else:
            command.downgrade(config, revision)
        connection.commit()


@pytest.fixture
def upgraded_engine(engine: Engine) -> Iterator[Engine]:
    """The shared store, left at the newest migration whatever the test did."""
    yield engine
    migrate(engine)


async def test_upgrading_from_0003_counts_the_rows_already_stored(upgraded_engine: Engine) -> None:
    engine = upgraded_engine
    write(engine, [pr_job(1, level="L2")], now=NOW - timedelta(days=20))
    write(engine, [pr_job(run, "a", conclusion="failure") for run in range(2, 6)])
    write(engine, [pr_job(run, "a", attempt=2) for run in range(2, 6)])
    write(engine, [pr_job(run, "b", level="L3") for run in range(2, 6)])
    before = await status_of(engine)

    _move_to(engine, "0003")
    assert "hud_level_jobs" not in inspect(engine).get_table_names()
    _move_to(engine, "head")

    after = await status_of(engine)
    assert after == before
    assert [c["measured"] for c in after["criteria"]] == [100.0, 0.0, 0.18]

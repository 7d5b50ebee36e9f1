"""Helpers for tests that share one migrated results store."""

from __future__ import annotations

from sqlalchemy import Engine, delete

from crcr.hud.models import Base


def clear(engine: Engine) -> None:
    """Empty every HUD table."""
    with engine.begin() as connection:
        for table in reversed(Base.metadata.sorted_tables):
            connection.execute(delete(table))

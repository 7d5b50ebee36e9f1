"""The summary view, read from the daily rollups."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Engine

from crcr.hud.queries import Summary


def read_summary(
    engine: Engine, window_days: int, event_type: str | None, now: datetime | None
) -> Summary:
    """Every backend's health over the window."""
    raise NotImplementedError

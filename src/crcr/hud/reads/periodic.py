"""The nightly/periodic view."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Engine

from crcr.hud.queries import PeriodicRow


def read_periodic(
    engine: Engine, window_days: int, now: datetime | None
) -> tuple[PeriodicRow, ...]:
    """Latest tested upstream SHA and pass rate per backend."""
    raise NotImplementedError

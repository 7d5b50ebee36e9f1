"""A backend's page: figures and the commit-by-job matrix."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Engine

from crcr.hud.queries import BackendPage


def read_backend_page(
    engine: Engine,
    repo: str,
    window_days: int,
    page: int,
    per_page: int,
    event_type: str | None,
    now: datetime | None,
) -> BackendPage | None:
    """A backend's figures and its recent commits' job matrix."""
    raise NotImplementedError

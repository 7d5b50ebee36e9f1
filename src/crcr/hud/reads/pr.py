"""Every backend's jobs for one upstream PR."""

from __future__ import annotations

from sqlalchemy import Engine

from crcr.hud.queries import PrView


def read_pr(engine: Engine, number: int) -> PrView:
    """Every backend's jobs for an upstream PR."""
    raise NotImplementedError

"""Latency percentiles per backend per day."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Engine

from crcr.hud.queries import LatencyPoint


def read_latency(
    engine: Engine, window_days: int, now: datetime | None
) -> tuple[LatencyPoint, ...]:
    """Per backend per day p50/p90/p99."""
    raise NotImplementedError

"""How fresh the results store is: the marker the live pages poll to know when to redraw.

Every result written touches its backend's `last_run_at` and a new job row takes the
next id, so `(latest last_run_at, highest job id)` changes with every write the pages
show. Both are index lookups (the backends table is one row per backend; the id is the
primary key), so an open page may ask every few seconds at any volume.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Engine, func, select

from crcr.hud.models import BACKENDS, JOBS


@dataclass(frozen=True)
class Freshness:
    """`version` changes whenever a result is written; `last_result_at` is the latest write."""

    version: str
    last_result_at: datetime | None


def read_freshness(engine: Engine) -> Freshness:
    """The store's current change marker (one round trip, two index lookups)."""
    latest = select(func.max(BACKENDS.c.last_run_at)).scalar_subquery()
    highest = select(func.max(JOBS.c.id)).scalar_subquery()
    with engine.connect() as connection:
        row = connection.execute(select(latest.label("at"), highest.label("id"))).one()
    at: datetime | None = row.at  # max() keeps the column's type: an aware UTC datetime
    stamp = "0" if at is None else f"{at.timestamp():.6f}"
    return Freshness(version=f"{stamp}-{row.id or 0}", last_result_at=at)

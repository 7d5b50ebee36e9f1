"""Job rows as `JobRecord`s, the form every view shows them in."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crcr.hud.queries import JobRecord

_FIELDS = tuple(JobRecord.__dataclass_fields__)


def job_record(row: Mapping[Any, Any]) -> JobRecord:
    """A stored row as the read side's record."""
    return JobRecord(**{name: row[name] for name in _FIELDS})

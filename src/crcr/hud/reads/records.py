"""Job rows as `JobRecord`s, the form every view shows them in."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crcr.hud.job_facts import JobFacts


@dataclass(frozen=True)
class JobRecord(JobFacts):
    """One stored job execution, as the HUD holds it; None is a null column."""


_FIELDS = tuple(JobRecord.__dataclass_fields__)


def job_record(row: Mapping[Any, Any]) -> JobRecord:
    """A stored row as the read side's record."""
    return JobRecord(**{name: row[name] for name in _FIELDS})

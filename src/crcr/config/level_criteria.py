"""The level criteria's thresholds and windows (SPEC §10), from `CRCR_LEVEL_CRITERIA`.

The setting is JSON text or the path of a JSON/YAML file holding one object; every key
is optional and defaults to SPEC §10's table:

    {"demotion_window_days": 7, "promotion_window_days": 14,
     "job_pass_rate": 90, "timeout_rate": 1, "overrun_rate": 1,
     "e2e_p50_hours": 3, "avg_queue_minutes": 30, "days_at_l2": 30,
     "demotion_criteria": ["job_pass_rate", "timeout_rate", "e2e_p50_hours"],
     "promotion_criteria": [...all six...]}

A threshold is in the unit its criterion is measured in (percent, hours, minutes, days);
whether it is a floor (≥) or a ceiling (<) is the criterion's, not configuration. Values
are kept as decimals so that a boundary is judged exactly (90 % of 1000 jobs is 900).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from crcr.config.config_text import load_json_or_file

# In the order SPEC §10.1 lists them.
CRITERIA = (
    "job_pass_rate",
    "timeout_rate",
    "e2e_p50_hours",
    "overrun_rate",
    "avg_queue_minutes",
    "days_at_l2",
)
FLOORS = frozenset({"job_pass_rate", "days_at_l2"})  # met at or above; the rest below
PERCENTAGES = frozenset({"job_pass_rate", "timeout_rate", "overrun_rate"})
UNITS = {"e2e_p50_hours": " h", "avg_queue_minutes": " min", "days_at_l2": " days"}
DEMOTION_CRITERIA = ("job_pass_rate", "timeout_rate", "e2e_p50_hours")
MAX_WINDOW_DAYS = 90


@dataclass(frozen=True)
class LevelCriteria:
    """Thresholds, windows and which criteria judge a demotion or a promotion."""

    demotion_window_days: int = 7
    promotion_window_days: int = 14
    job_pass_rate: Decimal = Decimal(90)
    timeout_rate: Decimal = Decimal(1)
    e2e_p50_hours: Decimal = Decimal(3)
    overrun_rate: Decimal = Decimal(1)
    avg_queue_minutes: Decimal = Decimal(30)
    days_at_l2: Decimal = Decimal(30)
    demotion_criteria: tuple[str, ...] = DEMOTION_CRITERIA
    promotion_criteria: tuple[str, ...] = field(default=CRITERIA)

    def threshold(self, criterion: str) -> Decimal:
        """The configured threshold of `criterion`."""
        value: Decimal = getattr(self, criterion)
        return value

    def target(self, criterion: str) -> str:
        """The target as people read it: "≥ 90%", "< 3 h"."""
        sign = "≥" if criterion in FLOORS else "<"
        number = _plain(self.threshold(criterion))
        unit = "%" if criterion in PERCENTAGES else UNITS[criterion]
        return f"{sign} {number}{unit}"

    def met(self, criterion: str, measured: Fraction) -> bool:
        """Whether an exact measurement meets the criterion's threshold."""
        threshold = Fraction(self.threshold(criterion))
        return measured >= threshold if criterion in FLOORS else measured < threshold


def _plain(value: Decimal) -> str:
    return format(value.normalize(), "f")


def _number(key: str, value: Any) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal | str):
        raise ValueError(f"key {key!r}: must be a number, not {type(value).__name__}")
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        raise ValueError(f"key {key!r}: must be a number, not {value!r}") from None
    if not number.is_finite() or number < 0:
        raise ValueError(f"key {key!r}: must be a finite number ≥ 0, not {value!r}")
    if key in PERCENTAGES and number > 100:
        raise ValueError(f"key {key!r}: is a percentage, at most 100, not {value!r}")
    return number


def _window(key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_WINDOW_DAYS:
        raise ValueError(f"key {key!r}: must be a whole number of days from 1 to {MAX_WINDOW_DAYS}")
    return value


def _names(key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise ValueError(f"key {key!r}: must be a non-empty list of criteria")
    for name in value:
        if name not in CRITERIA:
            raise ValueError(
                f"key {key!r}: unknown criterion {name!r} (known: {', '.join(CRITERIA)})"
            )
    return tuple(name for name in CRITERIA if name in value)


def level_criteria_from(data: Any) -> LevelCriteria:
    """Validate an object of overrides; the error names the offending key."""
    if isinstance(data, LevelCriteria):
        return data
    if not isinstance(data, Mapping):
        raise ValueError(f"must be an object of criteria, not {type(data).__name__}")
    known = {f.name for f in fields(LevelCriteria)}
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key not in known:
            raise ValueError(f"unknown key {key!r} (known: {', '.join(sorted(known))})")
        if key.endswith("_window_days"):
            values[key] = _window(key, value)
        elif key.endswith("_criteria"):
            values[key] = _names(key, value)
        else:
            values[key] = _number(key, value)
    return LevelCriteria(**values)


def parse_level_criteria(text: str) -> LevelCriteria:
    """`CRCR_LEVEL_CRITERIA`: JSON text, or the path of a JSON or YAML file."""
    if not text.strip():
        return LevelCriteria()
    return level_criteria_from(load_json_or_file(text, parse_float=Decimal))

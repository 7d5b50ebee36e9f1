"""Judging a backend's measurements against the criteria: its verdict (SPEC §10, §10.1).

Pure and exact: rates and means are fractions of the rollups' integer counts and
millisecond sums, so 899 successes of 1000 jobs are 89.9 %, never 89.90000000000001 %.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from crcr.config.level_criteria import LevelCriteria

_HOUR_MS = 3_600_000
_MINUTE_MS = 60_000
JUDGED_FOR_DEMOTION = frozenset({"L3", "L4"})


@dataclass(frozen=True)
class Measurements:
    """What the rollups say of one backend over its window."""

    jobs: int = 0
    success: int = 0
    timed_out: int = 0
    overrun: int = 0
    queue_ms_sum: int = 0
    queue_n: int = 0
    e2e_p50_ms: Fraction | None = None
    days_at_l2: int | None = None


@dataclass(frozen=True)
class CriterionResult:
    """One criterion of a verdict; `met` is None when it could not be judged."""

    criterion: str
    measured: float | None
    target: str
    met: bool | None


@dataclass(frozen=True)
class Verdict:
    """A backend's judgement: `change` is "demote", "promote" or None."""

    change: str | None
    no_data: bool
    window_days: int
    criteria: tuple[CriterionResult, ...]


def window_for(level: str, criteria: LevelCriteria) -> int:
    """Days judged: the demotion window for L3/L4, the promotion window otherwise."""
    if level in JUDGED_FOR_DEMOTION:
        return criteria.demotion_window_days
    return criteria.promotion_window_days


def exact_values(measured: Measurements) -> Mapping[str, Fraction | None]:
    """Every criterion's exact value (percent, hours, minutes, days), None if unmeasurable."""
    jobs = measured.jobs

    def percent(part: int) -> Fraction | None:
        return Fraction(100 * part, jobs) if jobs else None

    return {
        "job_pass_rate": percent(measured.success),
        "timeout_rate": percent(measured.timed_out),
        "overrun_rate": percent(measured.overrun),
        "e2e_p50_hours": None if measured.e2e_p50_ms is None else measured.e2e_p50_ms / _HOUR_MS,
        "avg_queue_minutes": Fraction(measured.queue_ms_sum, measured.queue_n * _MINUTE_MS)
        if measured.queue_n
        else None,
        "days_at_l2": None if measured.days_at_l2 is None else Fraction(measured.days_at_l2),
    }


def judge(level: str, measured: Measurements, criteria: LevelCriteria) -> Verdict:
    """The verdict on a backend at `level` given its window's measurements.

    No job in the window: no verdict, nothing judged. An L3/L4 backend is demoted when
    a demotion criterion is judged and not met; an L2 backend is ready for promotion
    only when every promotion criterion is judged and met. L1 is not judged.
    """
    window = window_for(level, criteria)
    no_data = measured.jobs == 0
    if level in JUDGED_FOR_DEMOTION:
        names = criteria.demotion_criteria
    elif level == "L2":
        names = criteria.promotion_criteria
    else:
        return Verdict(change=None, no_data=no_data, window_days=window, criteria=())
    values = exact_values(measured)
    results = []
    for name in names:
        value = values[name]
        met = None if no_data or value is None else criteria.met(name, value)
        shown = None if value is None else round(float(value), 2)
        results.append(CriterionResult(name, shown, criteria.target(name), met))
    change = None
    if not no_data and level in JUDGED_FOR_DEMOTION:
        change = "demote" if any(r.met is False for r in results) else None
    elif not no_data and all(r.met is True for r in results):
        change = "promote"
    return Verdict(change=change, no_data=no_data, window_days=window, criteria=tuple(results))

"""Verdicts from measurements, at every criterion's boundary (pure, exact arithmetic)."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from crcr.config.level_criteria import LevelCriteria
from crcr.hud.levels.judge import Measurements, Verdict, judge

CRITERIA = LevelCriteria()
HOUR_MS = 3_600_000
HEALTHY = Measurements(
    jobs=1000,
    success=950,
    timed_out=0,
    overrun=0,
    queue_ms_sum=1000 * 60_000,
    queue_n=1000,
    e2e_p50_ms=Fraction(HOUR_MS),
    days_at_l2=45,
)


def met(verdict: Verdict) -> dict[str, bool | None]:
    return {c.criterion: c.met for c in verdict.criteria}


def test_a_healthy_l3_backend_keeps_its_level() -> None:
    verdict = judge("L3", HEALTHY, CRITERIA)

    assert (verdict.change, verdict.no_data, verdict.window_days) == (None, False, 7)
    assert met(verdict) == {"job_pass_rate": True, "timeout_rate": True, "e2e_p50_hours": True}


def test_pass_rate_89_9_percent_demotes_and_90_percent_does_not() -> None:
    below = judge("L4", replace(HEALTHY, success=899), CRITERIA)
    at = judge("L4", replace(HEALTHY, success=900), CRITERIA)

    assert below.change == "demote" and met(below)["job_pass_rate"] is False
    assert below.criteria[0].measured == 89.9
    assert at.change is None and met(at)["job_pass_rate"] is True


def test_exactly_1_percent_timeouts_is_not_met() -> None:
    verdict = judge("L3", replace(HEALTHY, jobs=100, success=95, timed_out=1), CRITERIA)

    assert met(verdict)["timeout_rate"] is False
    assert verdict.change == "demote"


def test_a_p50_of_exactly_3_hours_is_not_met() -> None:
    at = judge("L3", replace(HEALTHY, e2e_p50_ms=Fraction(3 * HOUR_MS)), CRITERIA)
    just_under = judge("L3", replace(HEALTHY, e2e_p50_ms=Fraction(3 * HOUR_MS - 1)), CRITERIA)

    assert met(at)["e2e_p50_hours"] is False and at.change == "demote"
    assert met(just_under)["e2e_p50_hours"] is True and just_under.change is None


def test_no_jobs_in_the_window_is_no_verdict() -> None:
    for level in ("L2", "L3", "L4"):
        verdict = judge(level, Measurements(days_at_l2=40), CRITERIA)

        assert verdict.no_data is True and verdict.change is None
        assert all(c.met is None for c in verdict.criteria)


def test_an_l2_backend_is_ready_only_when_every_promotion_criterion_is_met() -> None:
    ready = judge("L2", HEALTHY, CRITERIA)
    at_30_days = judge("L2", replace(HEALTHY, days_at_l2=30), CRITERIA)
    at_29_days = judge("L2", replace(HEALTHY, days_at_l2=29), CRITERIA)
    never_queued = judge("L2", replace(HEALTHY, queue_ms_sum=0, queue_n=0), CRITERIA)

    assert ready.change == "promote" and ready.window_days == 14
    assert [c.criterion for c in ready.criteria] == [
        "job_pass_rate",
        "timeout_rate",
        "e2e_p50_hours",
        "overrun_rate",
        "avg_queue_minutes",
        "days_at_l2",
    ]
    assert at_30_days.change == "promote"
    assert at_29_days.change is None and met(at_29_days)["days_at_l2"] is False
    assert never_queued.change is None, "a criterion that cannot be judged blocks promotion"
    assert met(never_queued)["avg_queue_minutes"] is None


def test_an_l2_backend_is_never_demoted_and_l1_is_not_judged() -> None:
    failing = replace(HEALTHY, success=10)

    assert judge("L2", failing, CRITERIA).change is None
    l1 = judge("L1", failing, CRITERIA)
    assert (l1.change, l1.criteria) == (None, ())


def test_overrun_and_queue_targets_are_ceilings() -> None:
    one_percent = replace(HEALTHY, jobs=100, success=95, overrun=1)
    half_hour = replace(HEALTHY, queue_ms_sum=1000 * 30 * 60_000)

    assert met(judge("L2", one_percent, CRITERIA))["overrun_rate"] is False
    assert met(judge("L2", half_hour, CRITERIA))["avg_queue_minutes"] is False

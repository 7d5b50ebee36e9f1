"""The canary's verdict from its probes and their jobs (SPEC §13), clock given."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from crcr.hud.health.canary import (
    CanaryStatus,
    CanaryVerdict,
    ProbeDispatch,
    ProbeJob,
    ProbeState,
    judge_canary,
)
from crcr.hud.health.expected import expected_conclusion

NOW = datetime(2026, 11, 27, 12, tzinfo=UTC)
DEADLINE = 1800.0


@pytest.mark.parametrize(
    ("name", "explicit", "expected"),
    [
        ("test", None, "success"),
        ("probe-xfail", None, "failure"),
        ("XCancel me", None, "cancelled"),
        ("sleep-xtimeout", None, "timed_out"),
        ("probe-xfail", "success", "success"),
        ("plain", "failure", "failure"),
    ],
)
def test_an_explicit_field_beats_the_name(name: str, explicit: str | None, expected: str) -> None:
    assert expected_conclusion(name, explicit) == expected


def probe(n: int, minutes_ago: float) -> ProbeDispatch:
    return ProbeDispatch(f"d{n}", "crcr_probe", NOW - timedelta(minutes=minutes_ago))


def done(n: int, name: str, conclusion: str, expected: str | None = None) -> ProbeJob:
    return ProbeJob(f"d{n}", name, "completed", conclusion, expected)


def judge(probes: list[ProbeDispatch], jobs: list[ProbeJob]) -> CanaryVerdict:
    return judge_canary(probes, jobs, now=NOW, deadline_seconds=DEADLINE)


def test_healthy_with_an_xfail_job_and_an_expected_conclusion_job_failing() -> None:
    probes = [probe(n, 60 * n + 5) for n in range(5)]
    jobs = [done(n, "test", "success") for n in range(5)]
    jobs += [done(0, "probe-xfail", "failure"), done(1, "declared", "failure", "failure")]

    verdict = judge(probes, jobs)

    assert verdict.status is CanaryStatus.HEALTHY
    assert [p.state for p in verdict.probes] == [ProbeState.PASSED] * 5
    assert verdict.unexpected == () and verdict.overdue == ()


def test_degraded_by_an_overdue_probe_lists_only_it() -> None:
    probes = [probe(0, 31), probe(1, 90), probe(2, 150)]
    jobs = [done(1, "test", "success"), done(2, "test", "success")]
    jobs.append(ProbeJob("d0", "test", "in_progress", None, None))

    verdict = judge(probes, jobs)

    assert verdict.status is CanaryStatus.DEGRADED
    assert [p.delivery_id for p in verdict.overdue] == ["d0"]
    assert verdict.unexpected == ()


def test_unexpected_lists_only_the_jobs_that_missed() -> None:
    probes = [probe(0, 40), probe(1, 100)]
    jobs = [
        done(0, "test", "success"),
        done(0, "probe-xfail", "success"),
        done(1, "probe-xcancel", "cancelled"),
        done(1, "declared", "success", "failure"),
    ]

    verdict = judge(probes, jobs)

    assert verdict.status is CanaryStatus.DEGRADED
    missed = {(u.delivery_id, u.job_name, u.conclusion, u.expected) for u in verdict.unexpected}
    assert missed == {
        ("d0", "probe-xfail", "success", "failure"),
        ("d1", "declared", "success", "failure"),
    }


def test_a_probe_in_flight_is_listed_but_never_judged() -> None:
    verdict = judge([probe(0, 5), probe(1, 70)], [done(1, "test", "success")])
    assert verdict.status is CanaryStatus.HEALTHY
    assert [p.state for p in verdict.probes] == [ProbeState.RUNNING, ProbeState.PASSED]
    assert judge([probe(0, 5)], []).status is CanaryStatus.NO_DATA


def test_only_the_last_five_judged_probes_count() -> None:
    probes = [probe(n, 60 * n + 40) for n in range(6)]
    jobs = [done(n, "test", "success") for n in range(5)] + [done(5, "test", "failure")]
    verdict = judge(probes, jobs)
    assert verdict.status is CanaryStatus.HEALTHY
    assert len(verdict.probes) == 5


def test_a_dispatch_never_answered_is_overdue_after_the_deadline() -> None:
    assert judge([probe(0, 29)], []).probes[0].state is ProbeState.RUNNING
    assert judge([probe(0, 31)], []).status is CanaryStatus.DEGRADED

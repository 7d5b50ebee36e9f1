"""The canary's nightly card, as values (SPEC §13): the probe rules over self-reported runs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from crcr.hud.health.canary import CanaryStatus, ProbeJob, ProbeState
from crcr.hud.health.nightly import NightlyRun, judge_nightly

NOW = datetime(2026, 11, 28, 3, tzinfo=UTC)


def run(night: int, *jobs: tuple[str, str, str | None]) -> NightlyRun:
    sha = f"{night:040x}"
    return NightlyRun(
        sha,
        NOW - timedelta(days=night),
        tuple(ProbeJob(sha, name, status, conclusion, None) for name, status, conclusion in jobs),
    )


def test_only_the_newest_five_are_judged() -> None:
    runs = [run(n, ("probe", "completed", "success")) for n in range(7)]
    runs.append(run(9, ("probe", "completed", "failure")))  # older than the five
    verdict = judge_nightly(runs)
    assert verdict.status is CanaryStatus.HEALTHY
    assert [j.run.delivery_id for j in verdict.runs] == [f"{n:040x}" for n in range(5)]


def test_a_run_still_going_is_listed_but_not_judged() -> None:
    verdict = judge_nightly([run(0, ("probe", "in_progress", None))])
    assert verdict.status is CanaryStatus.NO_DATA
    assert [j.state for j in verdict.runs] == [ProbeState.RUNNING]


def test_an_xcancel_job_cancelled_passes_and_one_that_succeeded_fails() -> None:
    verdict = judge_nightly(
        [
            run(0, ("probe-xcancel", "completed", "success")),
            run(1, ("probe-xcancel", "completed", "cancelled")),
        ]
    )
    assert verdict.status is CanaryStatus.DEGRADED
    assert [j.state for j in verdict.runs] == [ProbeState.FAILED, ProbeState.PASSED]
    assert [(u.job_name, u.expected) for u in verdict.unexpected] == [
        ("probe-xcancel", "cancelled")
    ]

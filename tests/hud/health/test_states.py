"""Backend states (SPEC §13) from completed jobs, with the clock given."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from crcr.hud.health.states import (
    BackendState,
    CompletedJob,
    Silence,
    backend_state,
)

NOW = datetime(2026, 11, 27, 12, tzinfo=UTC)
HOUR = 3600.0
QUIET = Silence(last_report_at=NOW, first_unanswered_dispatch_at=None)


def job(
    n: int, conclusion: str, *, event: str = "push", attempt: int = 1, name: str | None = None
) -> CompletedJob:
    """The n-th job back in time (0 is the newest)."""
    return CompletedJob(
        job=name or f"job-{n}",
        event_type=event,
        run_attempt=attempt,
        conclusion=conclusion,
        completed_at=NOW - timedelta(minutes=10 * n),
    )


def state(jobs: list[CompletedJob], silence: Silence = QUIET, after: int = 3) -> BackendState:
    return backend_state(jobs, silence, now=NOW, alert_after=after, stale_seconds=48 * HOUR)


def test_nothing_counted_is_no_data() -> None:
    assert state([]) is BackendState.NO_DATA
    probes = [
        job(n, "failure", event=event)
        for n, event in enumerate(["crcr_probe", "crcr_bisect", "crcr_aa", "pull_request"])
    ]
    assert state(probes) is BackendState.NO_DATA


def test_last_n_failed_is_failing_and_one_pass_among_them_is_passing() -> None:
    assert state([job(0, "failure"), job(1, "timed_out"), job(2, "failure")]) is (
        BackendState.FAILING
    )
    assert state([job(0, "failure"), job(1, "success"), job(2, "failure")]) is (
        BackendState.PASSING
    )


def test_fewer_than_n_failures_is_not_failing() -> None:
    assert state([job(0, "failure"), job(1, "failure")]) is BackendState.PASSING
    assert state([job(0, "failure"), job(1, "failure")], after=2) is BackendState.FAILING


def test_nightly_counts_and_probes_between_failures_never_do() -> None:
    jobs = [
        job(0, "failure", event="nightly"),
        job(1, "success", event="crcr_probe"),
        job(2, "success", event="pull_request"),
        job(3, "failure"),
        job(4, "success", event="crcr_aa"),
        job(5, "failure", event="nightly"),
        job(6, "success"),
    ]
    assert state(jobs) is BackendState.FAILING


def test_cancelled_and_skipped_are_passed_over() -> None:
    jobs = [job(0, "cancelled"), job(1, "failure"), job(2, "skipped"), job(3, "failure")]
    jobs.append(job(4, "failure"))
    assert state(jobs) is BackendState.FAILING


def test_a_failed_job_whose_rerun_passed_is_flaky() -> None:
    jobs = [
        job(0, "success", name="a", attempt=2),
        job(1, "failure", name="a", attempt=1),
        job(2, "success", name="b"),
    ]
    assert state(jobs) is BackendState.FLAKY
    older_attempt_passed = [
        job(0, "failure", name="a", attempt=2),
        job(1, "success", name="a", attempt=1),
        job(2, "success", name="b"),
    ]
    assert state(older_attempt_passed) is BackendState.PASSING


def test_silent_for_stale_hours_while_dispatched_is_stale() -> None:
    silent = Silence(
        last_report_at=NOW - timedelta(hours=48),
        first_unanswered_dispatch_at=NOW - timedelta(hours=47),
    )
    assert state([job(0, "success")], silent) is BackendState.STALE
    almost = Silence(NOW - timedelta(hours=47, minutes=59), NOW - timedelta(hours=40))
    assert state([job(0, "success")], almost) is BackendState.PASSING


def test_silence_without_dispatches_is_not_stale() -> None:
    idle = Silence(last_report_at=NOW - timedelta(days=30), first_unanswered_dispatch_at=None)
    assert state([job(0, "success")], idle) is BackendState.PASSING


@pytest.mark.parametrize(("sent_hours_ago", "expected"), [(48, "stale"), (47, "no_data")])
def test_never_reported_is_silent_since_its_first_dispatch(
    sent_hours_ago: int, expected: str
) -> None:
    never = Silence(None, NOW - timedelta(hours=sent_hours_ago))
    assert state([], never) == expected

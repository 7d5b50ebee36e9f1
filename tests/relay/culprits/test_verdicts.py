"""Where the default branch broke and how a dispatch ended, from HUD job rows; pure."""

from __future__ import annotations

from datetime import UTC, datetime

from crcr.hud.reads.culprits import JobResult
from crcr.relay.culprits.record import Bisection, Commit, Purpose, Step, Verdict
from crcr.relay.culprits.verdicts import BrokenRange, broken_range, verdict_of

AT = datetime(2026, 11, 28, tzinfo=UTC)


def job(
    sha: str, conclusion: str | None, *, name: str = "test", status: str = "completed"
) -> JobResult:
    return JobResult("d", sha, name, status, conclusion, AT)


def test_a_commit_fails_on_any_failed_job_and_passes_only_when_every_job_passed() -> None:
    assert verdict_of([job("a", "success"), job("a", "failure", name="lint")]) == "failure"
    assert verdict_of([job("a", "success"), job("a", None, name="x", status="in_progress")]) is None
    assert verdict_of([job("a", "success"), job("a", "success", name="lint")]) == "success"
    assert verdict_of([job("a", "cancelled")]) == "cancelled"
    assert verdict_of([]) is None


def test_the_range_runs_from_the_newest_pass_to_the_oldest_failure_after_it() -> None:
    newest_first = [
        job("e", "failure"),
        job("d", "failure"),
        job("c", "success"),
        job("b", "failure"),
    ]
    assert broken_range(newest_first) == BrokenRange(good="c", bad="d")


def test_no_range_while_main_passes_or_without_a_known_good_push() -> None:
    assert broken_range([job("b", "success"), job("a", "failure")]) is None
    assert broken_range([job("b", "failure"), job("a", "failure")]) is None


def test_a_bisection_reads_back_as_it_was_stored() -> None:
    bisection = Bisection(
        repo="org/xpu",
        good="a" * 40,
        bad="c" * 40,
        commits=(
            Commit("b" * 40, "Change (#12)"),
            Commit("c" * 40, "Merge pull request #13 from x"),
        ),
        started_at=1.5,
        verdict=Verdict.CONFIRMED,
        culprit="b" * 40,
        confirmed=True,
        steps=(Step(1, 0, "b" * 40, "crcr-bisect-1", Purpose.CONFIRM, 2.0, "failure"),),
        ended_at=9.0,
        version=3,
    )
    assert Bisection.from_store(bisection.to_store()) == bisection
    assert [c.pr_number for c in bisection.commits] == [12, 13]
    assert bisection.duration(100.0) == 7.5

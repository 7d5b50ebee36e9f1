"""Classify one failed pull-request job against its baseline push result. Pure.

`new`: the baseline passed, or failed other tests than the PR job did. `already_failing`:
the baseline failed too (the same tests, where both name theirs). `flaky`: a later
attempt of the same run on the same head SHA passed. `unknown`: no baseline result.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

Verdict = Literal["new", "already_failing", "flaky", "unknown"]
NEW: Verdict = "new"
ALREADY_FAILING: Verdict = "already_failing"
FLAKY: Verdict = "flaky"
UNKNOWN: Verdict = "unknown"
VERDICTS: tuple[Verdict, ...] = (NEW, ALREADY_FAILING, FLAKY, UNKNOWN)

FAILED_CONCLUSIONS = frozenset({"failure", "timed_out", "startup_failure"})
# What a baseline result must be to say anything: a cancelled or skipped push job tells
# neither way, so the search goes on to the push result before it.
DECISIVE_CONCLUSIONS = FAILED_CONCLUSIONS | {"success"}

BaselineKey = tuple[str, str, str]
"""(downstream repo, workflow name, job name): the same job across commits."""


@dataclass(frozen=True)
class Run:
    """One execution of a job, as classification needs it.

    `failed_tests` holds the names of the tests it reported failed, or None when it
    named none (then only the job as a whole can be compared).
    """

    row_key: str
    repo: str
    workflow: str
    job: str
    run_id: str
    run_attempt: int
    head_sha: str
    status: str
    conclusion: str | None
    at: datetime
    failed_tests: frozenset[str] | None = None

    @property
    def job_key(self) -> BaselineKey:
        return (self.repo, self.workflow, self.job)

    @property
    def failed(self) -> bool:
        return self.status == "completed" and self.conclusion in FAILED_CONCLUSIONS


def passed_on_retry(failed: Run, runs: Iterable[Run]) -> bool:
    """Whether a later attempt of `failed`'s run, on the same head SHA, passed."""
    return any(
        run.job_key == failed.job_key
        and run.run_id == failed.run_id
        and run.head_sha == failed.head_sha
        and run.run_attempt > failed.run_attempt
        and run.status == "completed"
        and run.conclusion == "success"
        for run in runs
    )


def against_baseline(failed: Run, baseline: Run | None) -> Verdict:
    """`failed` compared with the baseline push result of its job (None: there is none)."""
    if baseline is None:
        return UNKNOWN
    if not baseline.failed:
        return NEW
    if failed.failed_tests and baseline.failed_tests:
        # Tests the baseline did not fail are this PR's doing, even if others were
        # already failing.
        return NEW if failed.failed_tests - baseline.failed_tests else ALREADY_FAILING
    return ALREADY_FAILING


def classify(failed: Run, runs: Iterable[Run], baseline: Run | None) -> Verdict:
    """The verdict on a failed PR job; `runs` are the PR's other executions (for `flaky`)."""
    if passed_on_retry(failed, runs):
        return FLAKY
    return against_baseline(failed, baseline)

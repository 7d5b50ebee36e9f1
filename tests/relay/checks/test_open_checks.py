"""Open check runs as values (SPEC §10.2, invariant 1): whose they are, what a watch does.

The scenarios (a demotion under a confirming re-run, a re-run that never reports, a
removed backend) are in tests/relay/governance, over the real app.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from tests.relay.checks.test_check_runs import REPORT, job_data

from crcr.relay.allowlist.model import Level
from crcr.relay.checks.check_runs import check_run_fields
from crcr.relay.checks.open_checks import (
    RECHECK,
    OpenCheck,
    WatchStep,
    lost_check_fields,
    watch_key,
    watch_step,
    watched,
)
from crcr.relay.jobs.job import Job
from crcr.stores.state import JobRecord

TIMEOUT = 600.0
STARTED, ENDED = 1_000.0, 1_300.0


def job(state: str, **data: object) -> Job:
    record = JobRecord(state=state, data=job_data(in_progress_at=STARTED, **data))
    return Job.from_store("k", record)


RUNNING = job("IN_PROGRESS")
FAILED = job("COMPLETED", conclusion="failure", completed_at=ENDED)


def opened(**changes: object) -> OpenCheck:
    check = OpenCheck("k", "org/critical\x1f9001\x1fci\x1ftest", Level.L4, {"name": "n"})
    return replace(check, **changes)  # type: ignore[arg-type]


def test_an_open_check_run_belongs_to_its_job_and_to_the_job_s_other_attempts() -> None:
    assert opened().belongs_to(REPORT)
    assert opened(job_key="another").belongs_to(replace(REPORT, run_attempt="2"))
    assert not opened(job_key="another").belongs_to(replace(REPORT, run_id="9002"))


def test_a_watch_key_names_its_commit_and_check_and_no_job_key_is_one() -> None:
    key = watch_key("ab" * 20, "crcr/org/critical/ci/a/b")

    assert watched(key) == ("ab" * 20, "crcr/org/critical/ci/a/b")
    assert watched("d-1:org%2Fcritical:9001:1:test") is None


def test_an_open_check_run_survives_the_store_and_a_foreign_value_is_none() -> None:
    check = opened()
    assert OpenCheck.from_store(check.to_store()) == check
    assert OpenCheck.from_store('{"job_key": "k"}') is None
    assert OpenCheck.from_store("not json") is None


@pytest.mark.parametrize(
    ("now", "expected"),
    [
        (STARTED + 10, (WatchStep.WAIT, STARTED + TIMEOUT + 5)),
        # The zombie pass is late (no leader): the watch looks again, it never times out.
        (STARTED + TIMEOUT + 30, (WatchStep.WAIT, STARTED + TIMEOUT + 30 + RECHECK)),
    ],
)
def test_a_running_job_is_the_zombie_pass_s(now: float, expected: tuple[WatchStep, float]) -> None:
    assert (
        watch_step(RUNNING, confirming=False, now=now, zombie_timeout=TIMEOUT, slack=5) == expected
    )


def test_a_job_that_ended_without_its_final_check_run_gets_it() -> None:
    step, _ = watch_step(FAILED, confirming=False, now=ENDED + 1, zombie_timeout=TIMEOUT)
    assert step is WatchStep.CONCLUDE


def test_a_confirming_re_run_has_the_zombie_timeout_from_the_failure_to_report() -> None:
    waiting = watch_step(FAILED, confirming=True, now=ENDED + 1, zombie_timeout=TIMEOUT)
    late = watch_step(FAILED, confirming=True, now=ENDED + TIMEOUT, zombie_timeout=TIMEOUT)

    assert waiting == (WatchStep.WAIT, ENDED + TIMEOUT)
    assert late[0] is WatchStep.GIVE_UP_CONFIRMATION


def test_a_job_whose_record_is_gone_is_timed_out_from_the_fields_kept() -> None:
    fields = check_run_fields(REPORT)
    assert watch_step(None, confirming=False, now=1.0, zombie_timeout=TIMEOUT)[0] is WatchStep.LOST

    lost = lost_check_fields(opened(fields=fields))

    assert {k: lost[k] for k in ("name", "head_sha", "external_id", "details_url")} == {
        k: fields[k] for k in ("name", "head_sha", "external_id", "details_url")
    }
    assert (lost["status"], lost["conclusion"]) == ("completed", "timed_out")
    assert lost["output"]["title"] == "Timed out"

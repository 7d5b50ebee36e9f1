"""A job record in the store's shape loads as a typed `Job` and is written back unchanged."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from crcr.relay.allowlist.model import Level
from crcr.relay.jobs.dispatch import DispatchRecord, DispatchStatus, UpstreamContext
from crcr.relay.jobs.job import (
    Job,
    JobCompletion,
    JobRecordUnreadable,
    JobSupersession,
    JobTimeout,
)
from crcr.relay.jobs.lifecycle import JobState
from crcr.stores.keys import merged
from crcr.stores.state import JobRecord

SHA = "a" * 40
DISPATCH = DispatchRecord(
    delivery_id="d-1",
    repo="Org/Backend",
    status=DispatchStatus.DISPATCHED,
    context=UpstreamContext("pytorch/pytorch", "pull_request", SHA, 7, ("ciflow/crcr/xpu",)),
    sent_at=1000.0,
)
WORKFLOW = {
    "status": "in_progress",
    "name": "ci",
    "job_name": "test",
    "run_id": "9001",
    "run_attempt": "1",
    "url": "https://github.com/org/backend/actions/runs/9001",
    "check_run_id": "55",
}
CALLBACK = {"schema_version": "1", "delivery_id": "d-1", "workflow": WORKFLOW}
COMPLETED_CALLBACK = {
    **CALLBACK,
    "workflow": {
        **WORKFLOW,
        "status": "completed",
        "conclusion": "failure",
        "test_results": {"failed": 3, "failed_tests": [{"name": "t1"}], "failed_tests_dropped": 2},
    },
}

# What the in_progress callback writes, key for key as the store has always held it.
IN_PROGRESS_DATA: dict[str, Any] = {
    "status": "in_progress",
    "conclusion": None,
    "in_progress_at": 1010.5,
    "queue_time": 10.5,
    "verified_repo": "org/backend",
    "level": "L4",
    "issuer_kind": "github",
    "record": DISPATCH.to_store(),
    "callback": CALLBACK,
}
COMPLETION = JobCompletion("failure", 1070.0, COMPLETED_CALLBACK)
TIMEOUT = JobTimeout(1910.5)


def stored(state: str, *changes: dict[str, Any]) -> JobRecord:
    """A record as the store merges the writes (`StateStore.transition_job`)."""
    data: dict[str, Any] = {}
    for change in changes:
        data = merged(data, change)
    return JobRecord(state=state, data=data)


# Every record shape the relay writes today: started, completed, timed out, and completed
# after the sweeper's timeout (the late truth).
TODAYS_RECORDS = {
    "in progress": stored("IN_PROGRESS", IN_PROGRESS_DATA),
    "completed": stored("COMPLETED", IN_PROGRESS_DATA, COMPLETION.to_store()),
    "timed out": stored("TIMED_OUT", IN_PROGRESS_DATA, TIMEOUT.to_store()),
    "completed late": stored(
        "COMPLETED", IN_PROGRESS_DATA, TIMEOUT.to_store(), COMPLETION.to_store()
    ),
    "an unknown key": stored("IN_PROGRESS", {**IN_PROGRESS_DATA, "from_a_newer_release": 1}),
    "integer times": stored("IN_PROGRESS", {**IN_PROGRESS_DATA, "in_progress_at": 1010}),
    "no issuer kind": stored("IN_PROGRESS", {**IN_PROGRESS_DATA, "issuer_kind": None}),
}


@pytest.mark.parametrize("record", TODAYS_RECORDS.values(), ids=TODAYS_RECORDS.keys())
def test_a_record_in_todays_shape_round_trips_byte_for_byte(record: JobRecord) -> None:
    job = Job.from_store("k", record)

    assert job.to_record() == record
    assert json.dumps(job.to_store()) == json.dumps(record.data)


def test_a_started_job_is_written_as_the_in_progress_callback_always_wrote_it() -> None:
    job = Job.started(
        "k",
        verified_repo="org/backend",
        level=Level.L4,
        dispatch=DISPATCH,
        callback=CALLBACK,
        at=1010.5,
        queue_time=10.5,
        issuer_kind="github",
    )

    assert json.dumps(job.to_store()) == json.dumps(IN_PROGRESS_DATA)
    assert job.to_record().state == "IN_PROGRESS"


@pytest.mark.parametrize(
    ("moved", "record"),
    [
        ("completed", TODAYS_RECORDS["completed"]),
        ("timed_out", TODAYS_RECORDS["timed out"]),
    ],
)
def test_a_move_gives_the_job_the_store_holds_after_merging_it(
    moved: str, record: JobRecord
) -> None:
    started = Job.from_store("k", TODAYS_RECORDS["in progress"])

    after = started.completed(COMPLETION) if moved == "completed" else started.timed_out(TIMEOUT)

    assert after == Job.from_store("k", record)


def test_a_timeout_is_recorded_with_the_timed_out_conclusion() -> None:
    assert TIMEOUT.to_record() == JobRecord(
        "TIMED_OUT", {"timed_out_at": 1910.5, "conclusion": "timed_out"}
    )


def test_a_completion_is_recorded_with_what_it_merges_over_the_job() -> None:
    assert COMPLETION.to_record() == JobRecord(
        "COMPLETED",
        {
            "status": "completed",
            "conclusion": "failure",
            "completed_at": 1070.0,
            "callback": COMPLETED_CALLBACK,
        },
    )


def test_the_run_is_read_from_the_callback_kept_last() -> None:
    job = Job.from_store("k", TODAYS_RECORDS["completed"])

    run = job.run

    assert (run.workflow_name, run.job_name, run.run_id, run.run_attempt) == (
        "ci",
        "test",
        "9001",
        "1",
    )
    assert (run.check_run_id, run.reported_conclusion) == ("55", "failure")
    assert (run.failed_tests, run.failed_total) == (("t1",), 3)


def test_a_completion_keeps_the_failed_tests_without_their_messages() -> None:
    workflow = {**WORKFLOW, "test_results": {"failed_tests": [{"name": "t", "message": "m"}]}}

    completion = JobCompletion.of("failure", 1.0, {**CALLBACK, "workflow": workflow})

    assert completion.callback["workflow"]["test_results"]["failed_tests"] == [{"name": "t"}]


UNREADABLE = {
    "no dispatch record": {k: v for k, v in IN_PROGRESS_DATA.items() if k != "record"},
    "no callback": {**IN_PROGRESS_DATA, "callback": None},
    "no workflow": {**IN_PROGRESS_DATA, "callback": {"delivery_id": "d-1"}},
    "an unknown level": {**IN_PROGRESS_DATA, "level": "L9"},
    "a dispatch record without context": {**IN_PROGRESS_DATA, "record": {"repo": "o/r"}},
}


@pytest.mark.parametrize("data", UNREADABLE.values(), ids=UNREADABLE.keys())
def test_a_record_without_the_facts_of_a_job_is_unreadable(data: dict[str, Any]) -> None:
    record = JobRecord(state="IN_PROGRESS", data=data)

    with pytest.raises(JobRecordUnreadable):
        Job.from_store("k", record)
    assert Job.readable("k", record) is None


def test_an_unknown_state_is_unreadable() -> None:
    record = replace(TODAYS_RECORDS["in progress"], state="PAUSED")

    assert Job.readable("k", record) is None


def test_a_superseded_job_is_cancelled_and_bound_to_its_closed_dispatch() -> None:
    job = Job.from_store("k", JobRecord("IN_PROGRESS", IN_PROGRESS_DATA))
    closed = DISPATCH.superseded("f" * 40)

    superseded = job.superseded(JobSupersession(closed))
    merged = {**IN_PROGRESS_DATA, **JobSupersession(closed).to_store()}

    assert (superseded.state, superseded.conclusion) == (JobState.SUPERSEDED, "cancelled")
    assert superseded.dispatch.superseded_by == "f" * 40
    assert Job.from_store("k", JobRecord("SUPERSEDED", merged)) == superseded


def test_a_dispatch_record_without_supersession_is_stored_as_before() -> None:
    assert "superseded_by" not in DISPATCH.to_store()
    closed = DISPATCH.superseded("f" * 40)
    assert closed.accepts_callbacks
    assert DispatchRecord.from_store(closed.to_store()) == closed

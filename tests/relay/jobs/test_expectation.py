"""A queued HUD body is sent only while its job still stands where the body says."""

from __future__ import annotations

import pytest

from crcr.relay.jobs.expectation import HudExpectation
from crcr.relay.jobs.lifecycle import JobState
from crcr.stores.state import JobRecord

COMPLETED_FAILURE = HudExpectation("k", JobState.COMPLETED, "failure")


@pytest.mark.parametrize(
    ("record", "stale"),
    [
        (None, False),  # the job expired: nothing newer to protect
        (JobRecord("COMPLETED", {"conclusion": "failure"}), False),
        (JobRecord("COMPLETED", {"conclusion": "success"}), True),  # a corrected completion
        (JobRecord("TIMED_OUT", {"conclusion": "timed_out"}), True),
        (JobRecord("IN_PROGRESS", {"conclusion": None}), True),
    ],
)
def test_a_body_is_stale_once_its_job_has_moved_on(record: JobRecord | None, stale: bool) -> None:
    assert COMPLETED_FAILURE.is_stale(record) is stale


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            {"job_key": "k", "state": "COMPLETED", "conclusion": "failure"},
            COMPLETED_FAILURE,
        ),
        (
            {"job_key": "k", "state": "IN_PROGRESS", "conclusion": None},
            HudExpectation("k", JobState.IN_PROGRESS, None),
        ),
        (None, None),  # a self-report's body stands for no job
        ({"job_key": "", "state": "COMPLETED"}, None),
    ],
)
def test_a_queued_expectation_is_read_back_as_it_was_kept(
    raw: object, expected: HudExpectation | None
) -> None:
    assert HudExpectation.from_store(raw) == expected
    if expected is not None:
        assert expected.to_store() == raw

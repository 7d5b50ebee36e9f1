"""The job state machine's table and verdicts, without any I/O (SPEC §5 step 7)."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crcr.relay.jobs.lifecycle import (
    SUPERSEDE_FROM,
    JobState,
    ReportedStatus,
    Verdict,
    allowed_from_for_store,
    classify,
    job_store_key,
    new_record,
    store_states,
)
from crcr.stores.state import JobRecord, Transition

IN_PROGRESS, COMPLETED = ReportedStatus.IN_PROGRESS, ReportedStatus.COMPLETED


def was(state: JobState, conclusion: str | None = None) -> Transition:
    """The store's answer when the compare-and-set did not apply."""
    return Transition(applied=False, previous=JobRecord(str(state), {"conclusion": conclusion}))


def test_in_progress_may_only_start_a_job() -> None:
    assert allowed_from_for_store(IN_PROGRESS) == {None}


def test_completed_follows_in_progress_or_replaces_a_timeout_or_ends_a_superseded_job() -> None:
    assert allowed_from_for_store(COMPLETED) == {"IN_PROGRESS", "TIMED_OUT", "SUPERSEDED"}


def test_only_a_running_job_is_superseded() -> None:
    assert store_states(SUPERSEDE_FROM) == {"IN_PROGRESS"}


def test_an_in_progress_repeat_of_a_superseded_job_is_a_duplicate() -> None:
    verdict = classify(IN_PROGRESS, None, was(JobState.SUPERSEDED, "cancelled"))

    assert (verdict.verdict, verdict.http_status) == (Verdict.DUPLICATE, 200)


def test_a_transition_that_applied_is_accepted() -> None:
    verdict = classify(COMPLETED, "success", Transition(applied=True, previous=None))

    assert (verdict.verdict, verdict.http_status) == (Verdict.ACCEPTED, 200)


@pytest.mark.parametrize(
    ("status", "conclusion", "previous", "expected"),
    [
        (IN_PROGRESS, None, was(JobState.IN_PROGRESS), (Verdict.DUPLICATE, 200, "duplicate")),
        (
            IN_PROGRESS,
            None,
            was(JobState.TIMED_OUT, "timed_out"),
            (Verdict.DUPLICATE, 200, "duplicate"),
        ),
        (
            IN_PROGRESS,
            None,
            was(JobState.COMPLETED, "success"),
            (Verdict.CONFLICT, 409, "conflict"),
        ),
        (
            COMPLETED,
            "success",
            was(JobState.COMPLETED, "success"),
            (Verdict.DUPLICATE, 200, "duplicate"),
        ),
        (
            COMPLETED,
            "failure",
            was(JobState.COMPLETED, "success"),
            (Verdict.CONFLICT, 409, "conflict"),
        ),
        # counted as any other invalid report
        (COMPLETED, "success", Transition(False, None), (Verdict.NOT_STARTED, 400, "invalid")),
    ],
)
def test_a_callback_that_did_not_apply_is_classified_by_what_was_there(
    status: ReportedStatus,
    conclusion: str | None,
    previous: Transition,
    expected: tuple[Verdict, int, str],
) -> None:
    verdict = classify(status, conclusion, previous)

    assert (verdict.verdict, verdict.http_status, verdict.outcome) == expected
    assert verdict.accepted is False


def test_the_new_record_carries_the_target_state_and_the_data() -> None:
    record = new_record(COMPLETED, {"conclusion": "success"})

    assert record == JobRecord("COMPLETED", {"conclusion": "success"})


def test_a_new_run_attempt_is_a_new_job() -> None:
    first = job_store_key("d", "o/r", "1", "1", "test")
    rerun = job_store_key("d", "o/r", "1", "2", "test")

    assert first != rerun


def test_job_keys_cannot_collide_through_separators_and_ignore_repo_case() -> None:
    one = job_store_key("d", "o/r", "1", "1", "a:b")
    other = job_store_key("d", "o/r", "1", "1:a", "b")

    assert one != other
    assert job_store_key("d", "Org/Repo", "1", "1", "j") == (
        job_store_key("d", "org/repo", "1", "1", "j")
    )


@settings(max_examples=2000, deadline=None)
@given(
    st.lists(st.text(alphabet=st.characters(codec="utf-8"), max_size=12), min_size=5, max_size=5)
)
def test_a_job_key_is_every_part_percent_escaped_whatever_the_parts(parts: list[str]) -> None:
    """Keys already stored must keep reading the same: the shortcut for parts that need no
    escaping gives what `quote(part, safe="")` gives."""
    delivery, repo, run_id, attempt, name = parts
    expected = ":".join(
        quote(part, safe="") for part in (delivery, repo.lower(), run_id, attempt, name)
    )

    assert job_store_key(delivery, repo, run_id, attempt, name) == expected

"""Supersession's pure rules (SPEC §15): which dispatches move a PR's live head, which
supersede, what a `crcr_cancel` carries, and when a dispatch is still at work."""

from __future__ import annotations

import pytest

from crcr.relay.budgets.supersession import (
    cancel_payload,
    new_head,
    pull_of,
    supersedes_heads,
    unfinished,
)
from crcr.relay.jobs.dispatch import DispatchRecord, DispatchStatus, UpstreamContext
from crcr.relay.jobs.lifecycle import JobState
from crcr.stores.roles.pull_heads import NewHead

HEAD = "a" * 40


def context(
    event_type: str = "pull_request", action: str | None = "synchronize", pr: int | None = 7
) -> UpstreamContext:
    return UpstreamContext("Pytorch/Pytorch", event_type, HEAD, pr, action=action)


@pytest.mark.parametrize(
    ("event_type", "action", "pr", "expected"),
    [
        ("pull_request", "synchronize", 7, True),  # a new commit supersedes
        ("pull_request", "opened", 7, False),  # becomes the live head, supersedes nothing
        ("pull_request", "reopened", 7, False),
        ("pull_request", "closed", 7, None),  # a closed PR is not a synchronize
        ("pull_request", "labeled", 7, None),
        ("pull_request", "synchronize", None, None),
        ("push", None, None, None),  # pushes are never superseded
        ("crcr_probe", None, None, None),  # nor the relay's own dispatches
        ("crcr_bisect", None, None, None),
        ("crcr_aa", None, None, None),
        ("crcr_cancel", None, 7, None),
    ],
)
def test_which_dispatches_move_and_supersede_a_prs_live_head(
    event_type: str, action: str | None, pr: int | None, expected: bool | None
) -> None:
    assert supersedes_heads(context(event_type, action, pr)) is expected


def test_a_prs_heads_are_kept_under_its_repo_and_number_whatever_the_case() -> None:
    assert pull_of(context()) == "pytorch/pytorch#7"


def test_a_cancel_carries_the_superseded_delivery_and_commit_in_spec_shape() -> None:
    record = DispatchRecord("d-1", "org/x", DispatchStatus.DISPATCHED, context(), sent_at=1.0)

    payload = cancel_payload(record, "crcr-cancel-d-1")

    assert payload["event_type"] == "crcr_cancel"
    assert payload["delivery_id"] == "crcr-cancel-d-1"
    assert payload["cancel"] == {"delivery_id": "d-1", "head_sha": HEAD}
    assert payload["payload"] == {
        "repository": {"full_name": "Pytorch/Pytorch"},
        "pull_request": {"number": 7, "head": {"sha": HEAD}},
    }


@pytest.mark.parametrize(
    ("jobs", "expected"),
    [
        ([], True),  # nothing reported yet: it may be queued downstream
        ([JobState.IN_PROGRESS], True),
        ([JobState.COMPLETED, JobState.IN_PROGRESS], True),
        ([JobState.COMPLETED, JobState.TIMED_OUT], False),  # finished: its result counts
        ([JobState.SUPERSEDED], False),
    ],
)
def test_a_dispatch_is_unfinished_until_every_job_it_reported_ended(
    jobs: list[JobState], expected: bool
) -> None:
    assert unfinished(jobs) is expected


def test_a_synchronize_head_is_ordered_by_its_before_and_updated_at() -> None:
    payload = {"before": "b" * 40, "pull_request": {"updated_at": "2026-11-29T10:00:05Z"}}

    head = new_head("d-2", context(), payload)

    assert head == NewHead("d-2", HEAD, before="b" * 40, updated_at="2026-11-29T10:00:05Z")
    assert head.stored() == {
        "delivery_id": "d-2",
        "head_sha": HEAD,
        "updated_at": "2026-11-29T10:00:05Z",
    }


@pytest.mark.parametrize(
    "payload",
    [
        {},  # a dispatch by hand, or a trimmed payload
        {"before": None, "pull_request": {"updated_at": 1700000000}},
        {"before": ["x"], "pull_request": "not an object"},
    ],
)
def test_a_head_without_usable_order_fields_is_ordered_by_arrival(
    payload: dict[str, object],
) -> None:
    assert new_head("d-2", context(), payload) == NewHead("d-2", HEAD)


def test_only_a_synchronize_names_the_head_it_moved_from() -> None:
    payload = {"before": "b" * 40}
    assert new_head("d-1", context(action="opened"), payload).before == ""

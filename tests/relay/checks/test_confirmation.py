"""GitHub's word on a job against the job's own (SPEC §11), as values."""

from __future__ import annotations

import pytest

from crcr.relay.checks.confirmation import Confirmation, confirm, confirmed_body


@pytest.mark.parametrize(
    ("reported", "github", "expected"),
    [
        (
            "success",
            {"status": "completed", "conclusion": "success"},
            Confirmation("success", True),
        ),
        (
            "success",
            {"status": "completed", "conclusion": "failure"},
            Confirmation("failure", False),
        ),
        (
            "failure",
            {"status": "completed", "conclusion": "failure"},
            Confirmation("failure", True),
        ),
        (
            "canceled",
            {"status": "completed", "conclusion": "cancelled"},
            Confirmation("cancelled", True),
        ),
        ("success", {"status": "completed", "conclusion": None}, Confirmation(None, None)),
        ("success", {"status": "in_progress", "conclusion": None}, None),
        ("success", {"status": "queued"}, None),
    ],
)
def test_github_confirms_or_contradicts(
    reported: str, github: dict[str, object], expected: Confirmation | None
) -> None:
    assert confirm(reported, github) == expected


def test_only_a_contradiction_by_a_non_success_turns_a_check_red() -> None:
    assert Confirmation("failure", False).contradicts_success
    assert not Confirmation("success", False).contradicts_success
    assert not Confirmation("failure", True).contradicts_success
    assert not Confirmation(None, None).contradicts_success


def test_the_update_body_is_the_same_row_with_the_confirmation_added() -> None:
    body = {
        "trusted": {"verified_repo": "org/r", "downstream_repo_level": "L4"},
        "untrusted": {"callback_payload": {"delivery_id": "d", "workflow": {"name": "ci"}}},
    }
    update = confirmed_body(body, Confirmation("failure", False), checked_at="2026-11-25T10:00:00Z")
    assert update["untrusted"] == body["untrusted"]
    assert update["trusted"] == {
        "verified_repo": "org/r",
        "downstream_repo_level": "L4",
        "confirmed": False,
        "confirmation": {"github_conclusion": "failure", "checked_at": "2026-11-25T10:00:00Z"},
    }
    assert "confirmed" not in body["trusted"], "the original body is left as it was"


def test_an_unknown_conclusion_sends_no_confirmed_flag() -> None:
    update = confirmed_body({"trusted": {}}, Confirmation(None, None), checked_at="t")
    assert "confirmed" not in update["trusted"]
    assert update["trusted"]["confirmation"] == {"github_conclusion": None, "checked_at": "t"}

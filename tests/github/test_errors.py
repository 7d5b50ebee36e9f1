"""Errors name the call and the status, and map GitHub's statuses to types."""

from __future__ import annotations

import pytest

from crcr.github.errors import (
    GitHubAuthError,
    GitHubError,
    GitHubForbidden,
    GitHubNotFound,
    GitHubUnavailable,
    GitHubUnprocessable,
    error_for_status,
)


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (401, GitHubAuthError),
        (403, GitHubForbidden),
        (404, GitHubNotFound),
        (422, GitHubUnprocessable),
        (409, GitHubError),
        (500, GitHubUnavailable),
        (429, GitHubUnavailable),
    ],
)
def test_each_status_gets_its_type(status: int, kind: type[GitHubError]) -> None:
    error = error_for_status("POST /repos/o/r/dispatches", status, "nope")

    assert type(error) is kind
    assert (error.call, error.status, error.message) == (
        "POST /repos/o/r/dispatches",
        status,
        "nope",
    )


def test_the_message_reads_as_which_call_failed_and_why() -> None:
    error = GitHubUnavailable("GET /repos/o/r", None, "no answer within 10 s", retry_after=None)

    assert str(error) == "GET /repos/o/r failed (no answer): no answer within 10 s"

"""Typed GitHub API failures that say which call failed and why (never with credentials)."""

from __future__ import annotations


class GitHubError(Exception):
    """A GitHub call failed.

    `call` names it the way GitHub's docs do (`POST /repos/o/r/dispatches`), `status` is
    the last HTTP status (None when no answer came), `message` is GitHub's own message.
    """

    def __init__(self, call: str, status: int | None, message: str) -> None:
        self.call = call
        self.status = status
        self.message = message
        shown = status if status is not None else "no answer"
        super().__init__(f"{call} failed ({shown}): {message}")


class GitHubAuthError(GitHubError):
    """GitHub refused our credentials (401), or the App key could not sign."""


class GitHubForbidden(GitHubError):
    """403: the App lacks a permission, or GitHub refuses the action."""


class GitHubNotFound(GitHubError):
    """404: the resource does not exist or the App is not installed where it is."""


class GitHubUnprocessable(GitHubError):
    """422: GitHub understood the request and refused its content."""


class GitHubUnavailable(GitHubError):
    """5xx, 429, a rate limit, a timeout or a connection failure, after every retry.

    `retry_after` is GitHub's hint in seconds when it gave one, so a queue can wait
    exactly that long instead of guessing.
    """

    def __init__(
        self, call: str, status: int | None, message: str, retry_after: float | None = None
    ) -> None:
        super().__init__(call, status, message)
        self.retry_after = retry_after


_BY_STATUS: dict[int, type[GitHubError]] = {
    401: GitHubAuthError,
    403: GitHubForbidden,
    404: GitHubNotFound,
    422: GitHubUnprocessable,
}


def error_for_status(call: str, status: int, message: str) -> GitHubError:
    """The typed error for a final, non-retryable answer."""
    if status >= 500 or status == 429:
        return GitHubUnavailable(call, status, message)
    return _BY_STATUS.get(status, GitHubError)(call, status, message)

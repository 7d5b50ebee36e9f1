"""When to retry a GitHub call and how long to wait: pure functions over statuses and headers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from crcr.web.retry_policy import FULL_JITTER, Backoff, retry_after

GITHUB_BACKOFF = Backoff(base=0.5, cap=8.0, jitter=FULL_JITTER)
"""Full jitter: many requests retry GitHub at once (every callback of a busy minute
behind one outage), and full jitter spreads them furthest."""


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter, capped; GitHub's own hints win when given."""

    max_retries: int = 3
    backoff: Backoff = GITHUB_BACKOFF
    # A Retry-After longer than this is not slept on in-request: the caller gets the
    # error with the hint and can hand the work to a queue.
    max_hinted_wait: float = 30.0


def retry_after_seconds(headers: Mapping[str, str], now: float) -> float | None:
    """GitHub's wait hint: `Retry-After` (seconds or a date), or the rate-limit reset.

    `x-ratelimit-reset` only counts when `x-ratelimit-remaining` is 0, i.e. when the
    primary rate limit is exhausted.
    """
    value = headers.get("retry-after")
    if value is not None:
        return retry_after(value, now=now)
    if headers.get("x-ratelimit-remaining") == "0":
        reset = headers.get("x-ratelimit-reset", "")
        if reset.isascii() and reset.isdigit():
            return max(0.0, float(reset) - now)
    return None


def is_rate_limited(status: int, headers: Mapping[str, str]) -> bool:
    """A 403/429 that is GitHub throttling us rather than refusing the action."""
    if status == 429:
        return True
    return status == 403 and (
        "retry-after" in headers or headers.get("x-ratelimit-remaining") == "0"
    )


def is_retryable_status(status: int, headers: Mapping[str, str]) -> bool:
    """5xx and throttling are worth another try; other answers are final."""
    return status >= 500 or is_rate_limited(status, headers)

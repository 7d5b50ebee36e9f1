"""Retry decisions: what is worth retrying and how long to wait."""

from __future__ import annotations

import random
from email.utils import formatdate

import pytest

from crcr.github.retry import (
    RetryPolicy,
    is_rate_limited,
    is_retryable_status,
    retry_after_seconds,
)
from crcr.web.retry_policy import FULL_JITTER, Backoff

NOW = 1_700_000_000.0


def test_backoff_is_full_jitter_below_an_exponential_cap() -> None:
    policy = RetryPolicy(backoff=Backoff(base=0.5, cap=4.0, jitter=FULL_JITTER))
    rng = random.Random(7)

    waits = {
        attempt: [policy.backoff.delay(attempt, rng.random) for _ in range(200)]
        for attempt in range(6)
    }

    assert all(0 <= w <= 0.5 for w in waits[0])
    assert all(0 <= w <= 2.0 for w in waits[2])
    assert all(0 <= w <= 4.0 for w in waits[5])
    assert max(waits[5]) > 2.0  # the cap, not the base, bounds late attempts
    assert min(waits[5]) < 1.0  # full jitter reaches down towards zero


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "12"}, 12.0),
        ({"retry-after": formatdate(NOW + 30, usegmt=True)}, 30.0),
        ({"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW) + 45)}, 45.0),
        ({"x-ratelimit-remaining": "10", "x-ratelimit-reset": str(int(NOW) + 45)}, None),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "²"}, None),  # str.isdigit says yes, float() does not
        ({"x-ratelimit-remaining": "0", "x-ratelimit-reset": "²"}, None),
        ({"retry-after": "5", "x-ratelimit-remaining": "0", "x-ratelimit-reset": "1"}, 5.0),
        ({}, None),
    ],
)
def test_github_wait_hints_are_read_in_seconds(
    headers: dict[str, str], expected: float | None
) -> None:
    assert retry_after_seconds(headers, NOW) == expected


def test_a_reset_in_the_past_means_no_wait() -> None:
    headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW) - 5)}

    assert retry_after_seconds(headers, NOW) == 0.0


@pytest.mark.parametrize(
    ("status", "headers", "retryable"),
    [
        (500, {}, True),
        (502, {}, True),
        (503, {}, True),
        (429, {}, True),
        (403, {"x-ratelimit-remaining": "0"}, True),
        (403, {"retry-after": "60"}, True),
        (403, {}, False),
        (404, {}, False),
        (422, {}, False),
        (401, {}, False),
    ],
)
def test_only_server_errors_and_throttling_are_retried(
    status: int, headers: dict[str, str], retryable: bool
) -> None:
    assert is_retryable_status(status, headers) is retryable


def test_a_plain_403_is_a_refusal_not_throttling() -> None:
    assert not is_rate_limited(403, {"x-ratelimit-remaining": "4000"})

"""Every refusal is one type carrying its answer and the outcome it counts as."""

from __future__ import annotations

import pytest

from crcr.web.refusal import Invalid, RateLimited, Refused, TooLarge


@pytest.mark.parametrize(
    ("refused", "status_code", "body", "outcome", "headers"),
    [
        (
            Invalid("workflow.run_id: required"),
            400,
            {"detail": "workflow.run_id: required", "field": "workflow.run_id"},
            "invalid",
            {},
        ),
        (
            TooLarge("body: too large"),
            413,
            {"detail": "body: too large", "field": "body"},
            "too_large",
            {},
        ),
        (
            RateLimited("rate limit exceeded", 7),
            429,
            {"detail": "rate limit exceeded"},
            "rate_limited",
            {"Retry-After": "7"},
        ),
        (
            Refused(401, "token expired", "unauthorized", {"WWW-Authenticate": "Bearer"}),
            401,
            {"detail": "token expired"},
            "unauthorized",
            {"WWW-Authenticate": "Bearer"},
        ),
        (
            Refused(409, "job is COMPLETED", "conflict"),
            409,
            {"detail": "job is COMPLETED"},
            "conflict",
            {},
        ),
    ],
)
def test_a_refusal_carries_its_answer_and_its_outcome(
    refused: Refused,
    status_code: int,
    body: dict[str, str],
    outcome: str,
    headers: dict[str, str],
) -> None:
    assert (refused.status_code, refused.body, refused.outcome, refused.headers) == (
        status_code,
        body,
        outcome,
        headers,
    )


def test_every_refusal_is_caught_as_one_type() -> None:
    for refusal in (Invalid("x"), TooLarge("x"), RateLimited("x", 1)):
        with pytest.raises(Refused):
            raise refusal

"""The one retry policy: waits per retry, caps, jitter bounds, and `Retry-After` readings.

The `Retry-After` table runs against the relay's parser and the reporter's
standard-library copy alike, so the two cannot drift apart.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import formatdate

import pytest

from crcr.reporter import retry as reporter_retry
from crcr.web.retry_policy import (
    EQUAL_JITTER,
    FULL_JITTER,
    NO_JITTER,
    Backoff,
    retry_after,
    retrying,
)

NOW = 1_700_000_000.0


def lowest() -> float:
    return 0.0


def highest() -> float:
    return 1.0  # random() stays below 1.0; the bound is what matters


@pytest.mark.parametrize(
    ("backoff", "waits"),
    [
        (Backoff(base=1.0), [1.0, 2.0, 4.0, 8.0, 16.0]),
        (Backoff(base=5.0, cap=60.0), [5.0, 10.0, 20.0, 40.0, 60.0]),
        (Backoff(base=0.5, cap=8.0), [0.5, 1.0, 2.0, 4.0, 8.0]),
        (Backoff(base=0.2, factor=3.0), [0.2, 0.6, 1.8, 5.4, 16.2]),
        (Backoff(base=1.0, factor=1.0), [1.0, 1.0, 1.0, 1.0, 1.0]),
        (Backoff(base=0.0, cap=60.0), [0.0, 0.0, 0.0, 0.0, 0.0]),
    ],
)
def test_the_schedule_grows_by_the_factor_up_to_the_cap(
    backoff: Backoff, waits: list[float]
) -> None:
    assert [backoff.delay(retry, highest) for retry in range(5)] == pytest.approx(waits)


def test_a_retry_far_past_the_cap_neither_overflows_nor_passes_the_cap() -> None:
    assert Backoff(base=5.0, cap=60.0).delay(10_000) == 60.0
    assert math.isfinite(Backoff(base=1.0).delay(10_000))


@pytest.mark.parametrize(
    ("jitter", "low", "high"),
    [
        (FULL_JITTER, 0.0, 8.0),
        (EQUAL_JITTER, 4.0, 8.0),
        (NO_JITTER, 8.0, 8.0),
        ((1.0, 1.25), 8.0, 10.0),
    ],
)
def test_jitter_scales_the_wait_within_its_range(
    jitter: tuple[float, float], low: float, high: float
) -> None:
    backoff = Backoff(base=1.0, cap=8.0, jitter=jitter)
    rng = random.Random(28)

    waits = [backoff.delay(5, rng.random) for _ in range(500)]

    assert backoff.delay(5, lowest) == low
    assert backoff.delay(5, highest) == high
    assert all(low <= wait <= high for wait in waits)
    if low < high:
        assert max(waits) - min(waits) > (high - low) / 2  # it does spread


def test_the_sweepers_schedule_is_the_drains_as_it_was() -> None:
    """5 s doubling to a minute, half to all of it (relay/sweeper/drain.Backoff)."""
    drain = Backoff(base=5.0, cap=60.0, jitter=EQUAL_JITTER)

    assert [drain.delay(n, highest) for n in range(6)] == [5.0, 10.0, 20.0, 40.0, 60.0, 60.0]
    assert [drain.delay(n, lowest) for n in range(6)] == [2.5, 5.0, 10.0, 20.0, 30.0, 30.0]


# value, seconds it asks for at NOW (None: no readable hint)
RETRY_AFTER_TABLE: list[tuple[str | None, float | None]] = [
    (None, None),
    ("12", 12.0),
    ("0", 0.0),
    (" 7 ", 7.0),
    ("120", 120.0),
    ("86400", 86400.0),
    ("9" * 30, 1e30),
    (formatdate(NOW + 30, usegmt=True), 30.0),  # IMF-fixdate
    (formatdate(NOW - 30, usegmt=True), 0.0),  # a date in the past: no wait
    (formatdate(NOW + 3600, usegmt=True), 3600.0),
    ("Tuesday, 14-Nov-23 22:13:27 GMT", 7.0),  # RFC 850, obsolete but allowed
    ("Tue Nov 14 22:13:27 2023", 7.0),  # asctime: no zone, GMT by definition
    ("-5", None),
    ("1.5", None),
    ("+5", None),
    ("²", None),  # a digit to str.isdigit, not to float()
    ("٣", None),  # Arabic-Indic three: not delay-seconds
    ("soon", None),
    ("", None),
    ("Mon, 99 Foo 2023 99:99:99 GMT", None),
]


def _reporter(value: str | None, cap: float) -> float | None:
    policy = reporter_retry.RetryPolicy(max_retry_after=cap)
    return reporter_retry.retry_after_seconds(value, policy, now=datetime.fromtimestamp(NOW, UTC))


def _relay(value: str | None, cap: float) -> float | None:
    return retry_after(value, now=NOW, cap=cap)


PARSERS: dict[str, Callable[[str | None, float], float | None]] = {
    "relay": _relay,
    "reporter": _reporter,
}


@pytest.mark.parametrize("parser", PARSERS.values(), ids=PARSERS.keys())
@pytest.mark.parametrize(("value", "seconds"), RETRY_AFTER_TABLE)
def test_retry_after_reads_seconds_or_a_date_and_nothing_else(
    parser: Callable[[str | None, float], float | None], value: str | None, seconds: float | None
) -> None:
    assert parser(value, math.inf) == (None if seconds is None else pytest.approx(seconds))


@pytest.mark.parametrize("parser", PARSERS.values(), ids=PARSERS.keys())
@pytest.mark.parametrize(("value", "seconds"), RETRY_AFTER_TABLE)
def test_retry_after_is_capped(
    parser: Callable[[str | None, float], float | None], value: str | None, seconds: float | None
) -> None:
    assert parser(value, 60.0) == (None if seconds is None else pytest.approx(min(seconds, 60.0)))


@pytest.mark.parametrize(("attempt", "jitter"), [(n, j) for n in range(1, 7) for j in (0.0, 1.0)])
def test_the_reporters_schedule_is_the_policy_with_a_quarter_added(
    attempt: int, jitter: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        reporter_retry.random, "uniform", lambda low, high: low + (high - low) * jitter
    )
    reporter = reporter_retry.RetryPolicy()
    policy = Backoff(base=reporter.first_delay, cap=reporter.max_delay, jitter=(1.0, 1.25))

    assert reporter.delay(attempt) == pytest.approx(policy.delay(attempt - 1, lambda: jitter))


class Down(Exception):
    """What the calls under `retrying` fail with."""


class Calls:
    """A call that fails `failures` times, then answers; the waits slept between."""

    def __init__(self, failures: int, hint: float | None = None) -> None:
        self.failures = failures
        self.hint = hint
        self.made = 0
        self.slept: list[float] = []

    async def __call__(self) -> str:
        self.made += 1
        if self.made <= self.failures:
            raise Down(self.hint)
        return "answer"

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


BACKOFF = Backoff(base=1.0, cap=4.0)


async def test_retrying_waits_by_the_backoff_until_the_call_answers() -> None:
    calls = Calls(failures=4)

    answer = await retrying(calls, backoff=BACKOFF, retry_on=Down, tries=5, sleep=calls.sleep)

    assert (answer, calls.made, calls.slept) == ("answer", 5, [1.0, 2.0, 4.0, 4.0])


async def test_retrying_raises_the_last_failure_once_the_tries_are_spent() -> None:
    calls = Calls(failures=9)

    with pytest.raises(Down):
        await retrying(calls, backoff=BACKOFF, retry_on=Down, tries=3, sleep=calls.sleep)

    assert (calls.made, calls.slept) == (3, [1.0, 2.0])


async def test_retrying_without_a_limit_goes_on_until_it_works() -> None:
    calls = Calls(failures=20)

    assert await retrying(calls, backoff=BACKOFF, retry_on=Down, sleep=calls.sleep) == "answer"
    assert calls.made == 21


async def test_retrying_does_not_wait_past_its_deadline() -> None:
    calls = Calls(failures=9)
    now = [100.0]

    async def sleep(seconds: float) -> None:
        calls.slept.append(seconds)
        now[0] += seconds

    with pytest.raises(Down):
        await retrying(
            calls, backoff=BACKOFF, retry_on=Down, deadline=105.0, sleep=sleep, clock=lambda: now[0]
        )

    assert calls.slept == [1.0, 2.0]  # a third wait (4 s) would end at 107


async def test_a_hint_replaces_the_backoffs_wait() -> None:
    calls = Calls(failures=2, hint=30.0)

    await retrying(
        calls,
        backoff=BACKOFF,
        retry_on=Down,
        hint=lambda failure: failure.args[0],
        sleep=calls.sleep,
    )

    assert calls.slept == [30.0, 30.0]


async def test_what_is_not_retried_is_raised_at_once_and_each_retry_is_heard() -> None:
    heard: list[tuple[str, float]] = []
    calls = Calls(failures=1)

    await retrying(
        calls,
        backoff=BACKOFF,
        retry_on=Down,
        on_retry=lambda failure, wait: heard.append((type(failure).__name__, wait)),
        sleep=calls.sleep,
    )

    async def refused() -> None:
        raise ValueError("refused")

    with pytest.raises(ValueError, match="refused"):
        await retrying(refused, backoff=BACKOFF, retry_on=Down, sleep=calls.sleep)
    assert heard == [("Down", 1.0)]
    assert calls.slept == [1.0]

"""Abandoned (SPEC §13, RFC-0050): stale for 28 days, judged with the clock given."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from crcr.hud.health.abandoned import Abandoned, abandoned
from crcr.hud.health.states import Silence

NOW = datetime(2026, 11, 28, tzinfo=UTC)
DAYS = timedelta(days=1)


def test_silence_since_the_last_report_while_dispatched_to_counts() -> None:
    silence = Silence(NOW - 30 * DAYS, NOW - 29 * DAYS)
    found = abandoned("o/r", silence, NOW)
    assert found == Abandoned("o/r", NOW - 30 * DAYS, NOW - 30 * DAYS)
    assert found.silent_days(NOW) == 30


def test_a_backend_that_never_reported_is_silent_since_its_first_dispatch() -> None:
    assert abandoned("o/r", Silence(None, NOW - 27 * DAYS), NOW) is None
    found = abandoned("o/r", Silence(None, NOW - 28 * DAYS), NOW)
    assert found is not None and found.silent_since == NOW - 28 * DAYS


def test_nothing_sent_since_the_last_report_is_never_abandonment() -> None:
    assert abandoned("o/r", Silence(NOW - 90 * DAYS, None), NOW) is None

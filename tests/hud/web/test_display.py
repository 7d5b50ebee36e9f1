"""How figures are shown: thresholds, durations, times, outcomes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from crcr.hud.web import display


@pytest.mark.parametrize(
    ("rate", "tone"),
    [
        (1.0, "good"),
        (0.95, "good"),
        (0.9499, "warn"),
        (0.80, "warn"),
        (0.799, "bad"),
        (0.0, "bad"),
        (None, "none"),
    ],
)
def test_pass_rates_are_green_from_95_amber_from_80_red_below(
    rate: float | None, tone: str
) -> None:
    assert display.pass_rate_tone(rate) == tone


def test_percentages_drop_a_useless_decimal() -> None:
    assert display.percent(1.0) == "100%"
    assert display.percent(0.875) == "87.5%"
    assert display.percent(2 / 3) == "66.7%"
    assert display.percent(None) == "—"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "—"),
        (0, "0s"),
        (1.234, "1.2s"),
        (42, "42s"),
        (192, "3m 12s"),
        (3600, "1h 00m"),
        (7500, "2h 05m"),
        (3 * 86400 + 4 * 3600, "3d 4h"),
    ],
)
def test_durations_read_the_way_people_say_them(seconds: float | None, text: str) -> None:
    assert display.duration(seconds) == text


def test_relative_times() -> None:
    now = datetime(2026, 1, 10, 12, 0, tzinfo=UTC)
    assert display.ago(now - timedelta(seconds=20), now) == "just now"
    assert display.ago(now - timedelta(minutes=5), now) == "5m ago"
    assert display.ago(now - timedelta(hours=3, minutes=59), now) == "3h ago"
    assert display.ago(now - timedelta(days=2), now) == "2d ago"
    assert display.ago(None, now) == "never"
    naive = datetime(2026, 1, 10, 11, 0)
    assert display.ago(naive, now) == "1h ago"


def test_outcome_of_unfinished_jobs_is_running_or_queued() -> None:
    assert display.outcome("in_progress", None) == "in_progress"
    assert display.outcome("queued", None) == "queued"
    assert display.outcome("completed", "failure") == "failure"
    assert display.outcome("completed", None) == "in_progress"


def test_every_outcome_has_a_symbol_so_colour_is_never_the_only_signal() -> None:
    words = ["success", "failure", "timed_out", "cancelled", "skipped", "in_progress"]
    symbols = [display.outcome_icon(word) for word in words]
    assert len(set(symbols)) == len(symbols)
    assert display.outcome_tone("failure") == "bad"
    assert display.outcome_tone("timed_out") == "bad"
    assert display.outcome_tone("success") == "good"
    assert display.outcome_tone("something-new") == "muted"


def test_failures_rank_worse_than_timeouts_worse_than_successes() -> None:
    ranked = sorted(["success", "timed_out", "failure", "cancelled"], key=display.severity)
    assert ranked == ["failure", "timed_out", "cancelled", "success"]


def test_axis_durations_drop_zero_parts() -> None:
    assert display.duration_short(3600) == "1h"
    assert display.duration_short(2400) == "40m"
    assert display.duration_short(86400) == "1d"
    assert display.duration_short(5400) == "1h 30m"

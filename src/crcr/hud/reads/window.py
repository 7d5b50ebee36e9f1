"""Window arithmetic shared by the views: whole UTC days ending today."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta


def window_days(window: int, now: datetime | None) -> tuple[date, ...]:
    """The days of a window, oldest first; `window=1` is today alone."""
    today = (now or datetime.now(UTC)).astimezone(UTC).date()
    return tuple(today - timedelta(days=offset) for offset in range(window - 1, -1, -1))


def day_start(day: date) -> datetime:
    """Midnight UTC at the start of `day`."""
    return datetime.combine(day, time.min, tzinfo=UTC)


def ratio(part: int, whole: int) -> float | None:
    """`part / whole`, or None when there is nothing to divide."""
    return part / whole if whole else None


def mean_seconds(millis_sum: int, count: int) -> float | None:
    """Mean of a rollup's millisecond sum, in seconds."""
    return round(millis_sum / count / 1000, 3) if count else None

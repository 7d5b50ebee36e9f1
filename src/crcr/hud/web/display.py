"""How figures are shown: colour tones, outcome symbols, durations, relative times.

Pure functions used by the templates (registered as Jinja filters) and tested alone.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

Tone = Literal["good", "warn", "bad", "none"]

# Rates are fractions (0.0-1.0), as the queries return them; shown as percentages.
PASS_GOOD = 0.95  # at or above is green
PASS_WARN = 0.80  # at or above is amber, below is red

LEVEL_NAMES = {
    "L4": "Merge-gating",
    "L3": "Check runs",
    "L2": "Reporting",
    "L1": "Dispatch only",
}

# Worst first: the order in which a collapsed column picks what to show.
_SEVERITY = (
    "failure",
    "timed_out",
    "startup_failure",
    "action_required",
    "cancelled",
    "in_progress",
    "queued",
    "stale",
    "neutral",
    "skipped",
    "success",
)

_CONCLUSION_TONE: dict[str, str] = {
    "success": "good",
    "failure": "bad",
    "timed_out": "bad",
    "startup_failure": "bad",
    "action_required": "warn",
    "cancelled": "muted",
    "skipped": "muted",
    "neutral": "muted",
    "stale": "muted",
    "in_progress": "running",
    "queued": "running",
}

_CONCLUSION_ICON: dict[str, str] = {
    "success": "✓",
    "failure": "✗",
    "timed_out": "◷",
    "startup_failure": "✗",
    "action_required": "!",
    "cancelled": "⊘",
    "skipped": "\u2013",
    "neutral": "○",
    "stale": "○",
    "in_progress": "●",
    "queued": "○",
}


def pass_rate_tone(rate: float | None) -> Tone:
    """Colour a pass rate (a fraction): green from 95 %, amber from 80 %, red below."""
    if rate is None:
        return "none"
    if rate >= PASS_GOOD:
        return "good"
    if rate >= PASS_WARN:
        return "warn"
    return "bad"


def percent(rate: float | None, digits: int = 1) -> str:
    """Show a fraction as a percentage, trimming a useless `.0` (100% not 100.0%)."""
    if rate is None:
        return "—"
    text = f"{rate * 100:.{digits}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"{text}%"


def duration(seconds: float | None) -> str:
    """Show a duration the way people say it: 42s, 3m 12s, 2h 05m, 3d 4h."""
    if seconds is None:
        return "—"
    total = round(seconds)
    if total < 60:
        return f"{seconds:.1f}s" if 0 < seconds < 10 and total != seconds else f"{total}s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h {minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h"


def duration_short(seconds: float | None) -> str:
    """A duration for an axis tick, without zero parts (1h rather than 1h 00m)."""
    text = duration(seconds)
    for zero in (" 00s", " 00m", " 0h"):
        text = text.removesuffix(zero)
    return text


def ago(moment: datetime | None, now: datetime | None = None) -> str:
    """Show how long ago something happened, coarsely (5m ago, 3h ago, 2d ago)."""
    if moment is None:
        return "never"
    now = now or datetime.now(UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    seconds = (now - moment).total_seconds()
    if seconds < 60:
        return "just now"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "just now"  # pragma: no cover - the loop always returns


def timestamp(moment: datetime | None) -> str:
    """Show an absolute UTC time for tooltips."""
    if moment is None:
        return ""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def short_sha(sha: str | None) -> str:
    """Abbreviate a commit SHA the way GitHub does."""
    return (sha or "")[:7]


def outcome(status: str | None, conclusion: str | None) -> str:
    """Reduce a job's status and conclusion to one word for colour and ordering."""
    if status != "completed" or not conclusion:
        return "queued" if status == "queued" else "in_progress"
    return conclusion


def outcome_tone(word: str) -> str:
    """The CSS tone of an outcome word (good, bad, warn, muted, running)."""
    return _CONCLUSION_TONE.get(word, "muted")


def outcome_icon(word: str) -> str:
    """A one-character symbol for an outcome, so colour is never the only signal."""
    return _CONCLUSION_ICON.get(word, "?")


def severity(word: str) -> int:
    """Rank an outcome: lower is worse. Unknown words sort just after failures."""
    try:
        return _SEVERITY.index(word)
    except ValueError:
        return 1

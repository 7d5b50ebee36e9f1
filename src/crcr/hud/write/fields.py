"""The HUD's rules for a row's conclusion, attempt and times, one definition for both ends.

The relay's callback schema checks a body with these same rules, so a callback the
relay accepts is one the in-process HUD stores: the relay hands it the typed report
(`JobReport`) without a second parse, and a bad value is refused where it was sent,
naming the field, rather than bounced back from the HUD after the job has moved.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

MAX_CONCLUSION_CHARS = 30
_CONCLUSION = re.compile(rf"[a-z_]{{1,{MAX_CONCLUSION_CHARS}}}")
MAX_ATTEMPT_DIGITS = 9


def conclusion_problem(value: str) -> str | None:
    """Why `value` is not a check-run conclusion (`success`, `timed_out`, …), or None."""
    if _CONCLUSION.fullmatch(value) is None:
        return (
            f"is not a check-run conclusion (lower-case letters and _, "
            f"at most {MAX_CONCLUSION_CHARS})"
        )
    return None


def run_attempt_number(text: str) -> int:
    """A run attempt as its number; ValueError unless it is a positive integer."""
    if not text.isascii() or not text.isdigit() or len(text) > MAX_ATTEMPT_DIGITS:
        raise ValueError("must be a positive integer")
    number = int(text)
    if number < 1:
        raise ValueError("must be a positive integer")
    return number


def utc_timestamp(text: str) -> datetime:
    """An ISO-8601 time in UTC (a time without zone is taken as UTC); ValueError otherwise."""
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError("is not an ISO-8601 timestamp") from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)

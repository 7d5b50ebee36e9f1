"""An abandoned backend (SPEC §13, RFC-0050): stale for four weeks, proposed for L1.

Pure. RFC-0050 calls a backend with no results for more than four weeks abandoned; the
relay judges it the way it judges `stale` — silent while dispatches were still sent to
it, so a quiet upstream never abandons anyone — only over 28 days instead of
`CRCR_STALE_HOURS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from crcr.hud.health.states import Silence

ABANDONED_DAYS = 28


@dataclass(frozen=True)
class Abandoned:
    """A backend silent since `silent_since` while dispatches went to it."""

    repo: str
    silent_since: datetime
    last_report_at: datetime | None

    def silent_days(self, now: datetime) -> int:
        """Whole days of silence as of `now`."""
        return int((now - self.silent_since).total_seconds() // 86400)


def abandoned(
    repo: str, silence: Silence, now: datetime, days: float = ABANDONED_DAYS
) -> Abandoned | None:
    """`repo` as abandoned when it has been stale for `days`, else None.

    A backend that never reported is silent since the first dispatch it was sent.
    """
    sent = silence.first_unanswered_dispatch_at
    if sent is None:
        return None
    since = silence.last_report_at or sent
    if (now - since).total_seconds() < days * 86400:
        return None
    return Abandoned(repo, since, silence.last_report_at)

"""Demotion to L1 of an abandoned backend, as a level pull request (SPEC §13, §10.1).

A backend stale for 28 days (`hud.health.abandoned`) is proposed for L1 by
`crcr levels sync` like any demotion: the same branch `crcr-demotion/<owner>/<repo>`,
label and text edit of the allowlist (pins, oncalls and comments kept, SPEC §10.2), only
its body says why — silence, not criteria — and it goes straight to L1, where a backend
is still dispatched to but costs nobody a check run. It wins over a criteria demotion of
the same backend (one branch per backend). A backend that reports again is no longer
abandoned; its pull request is closed once its level status says so, as any recovery.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from crcr.hud.health.abandoned import ABANDONED_DAYS, Abandoned
from crcr.relay.allowlist.model import Allowlist, Level
from crcr.relay.levels.proposals import Proposal, pull_request_footer
from crcr.relay.levels.status import BackendStatus

AbandonedSource = Callable[[], Awaitable[tuple[datetime, Sequence[Abandoned]]]]
"""The abandoned backends as of a moment, and that moment (the relay's health)."""


def _day(moment: datetime) -> str:
    return moment.date().isoformat()


@dataclass(frozen=True)
class AbandonedProposal(Proposal):
    """An L1 demotion whose reason is four weeks of silence."""

    silent_since: datetime | None = None
    silent_days: int = ABANDONED_DAYS

    def body(self) -> str:
        """Why (silence while dispatched to), what L1 means, and the oncalls @-mentioned."""
        since = "" if self.silent_since is None else f" (since {_day(self.silent_since)})"
        lines = [
            f"`{self.repo}` has reported nothing for {self.silent_days} days{since} while the "
            "relay kept dispatching to it. RFC-0050 calls a backend with no results for more "
            f"than four weeks abandoned, so crcr proposes moving it from {self.from_level} to "
            f"{self.to_level}: it still gets dispatches, and sends no results nor check runs. "
            "If it reports again first, crcr closes this pull request; merging is left to "
            "people.",
            "",
        ]
        return "\n".join([*lines, *pull_request_footer(self.oncalls)]) + "\n"


def abandonment_proposals(
    now: datetime,
    found: Sequence[Abandoned],
    allowlist: Allowlist,
    statuses: Mapping[str, BackendStatus],
) -> list[AbandonedProposal]:
    """One L1 proposal per abandoned backend still above L1 on the allowlist."""
    proposals = []
    for backend in found:
        entry = allowlist.entry(backend.repo)
        if entry is None or entry.level == Level.L1:
            continue
        status = statuses.get(entry.repo.lower()) or BackendStatus(
            entry.repo, entry.level, None, True, 0, ()
        )
        proposals.append(
            AbandonedProposal(
                entry.repo,
                entry.level,
                Level.L1,
                entry.oncalls,
                status,
                silent_since=backend.silent_since,
                silent_days=backend.silent_days(now),
            )
        )
    return proposals

"""What a temporary demotion is and does (SPEC §10.1), as pure values and rules.

A demotion starts when the HUD's verdict for an L3/L4 backend says `demote`; from then
on a *new* job of that backend is treated one level lower, while a job that was already
running when it began finishes at its own level. It ends when the verdict no longer says
`demote` (judged on data; a window without jobs proves nothing), or when the allowlist
no longer has the backend at the level it was demoted from (the pull request merged, or
someone changed the entry by hand).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from crcr.relay.allowlist.model import Allowlist, Level
from crcr.relay.levels.status import BackendStatus

DEMOTABLE = frozenset({Level.L3, Level.L4})


@dataclass(frozen=True)
class Demotion:
    """A backend treated one level lower since `since`; `pr_url` once its PR is open."""

    repo: str
    since: datetime
    from_level: Level
    pr_url: str | None = None

    @property
    def to_level(self) -> Level:
        """The level its new jobs are treated at."""
        return Level(self.from_level - 1)

    def to_store(self) -> dict[str, Any]:
        """The state store's record (strings only: it is shared across instances)."""
        return {
            "repo": self.repo,
            "since": self.since.isoformat(),
            "from_level": str(self.from_level),
            "pr_url": self.pr_url,
        }

    @classmethod
    def from_store(cls, key: str, record: Mapping[str, Any]) -> Demotion:
        """Rebuild a demotion; `ValueError` when the record is not one."""
        since = datetime.fromisoformat(str(record["since"]))
        if since.tzinfo is None:
            since = since.replace(tzinfo=UTC)
        level = Level[str(record["from_level"])]
        pr_url = record.get("pr_url")
        return cls(str(record.get("repo") or key), since, level, str(pr_url) if pr_url else None)


def level_for_job(level: Level, started_at: float | None, demotion: Demotion | None) -> Level:
    """The level a job is treated at, given the level recorded when it started.

    A job recorded at another level than the demotion's (the allowlist changed since)
    keeps its own; one that started before the demotion finishes as it began.
    """
    if demotion is None or level != demotion.from_level:
        return level
    if started_at is not None and started_at < demotion.since.timestamp():
        return level
    return demotion.to_level


@dataclass(frozen=True)
class DemotionPlan:
    """What one refresh changes: demotions to start, and repos whose demotion ends."""

    start: tuple[Demotion, ...] = ()
    end: tuple[str, ...] = ()


def plan_demotions(
    statuses: Mapping[str, BackendStatus],
    allowlist: Allowlist,
    current: Mapping[str, Demotion],
    now: datetime,
) -> DemotionPlan:
    """Compare the verdicts and the allowlist with the demotions in force."""
    start = []
    for key, status in statuses.items():
        entry = allowlist.entry(status.repo)
        if (
            status.change == "demote"
            and not status.no_data
            and entry is not None
            and entry.level in DEMOTABLE
            and key not in current
        ):
            start.append(Demotion(entry.repo, now, entry.level))
    end = []
    for key, demotion in current.items():
        verdict = statuses.get(key)
        recovered = verdict is not None and not verdict.no_data and verdict.change != "demote"
        if recovered or allowlist.level_of(demotion.repo) != demotion.from_level:
            end.append(key)
    return DemotionPlan(tuple(start), tuple(end))

"""Declines, overrides and level-history episodes as values (SPEC §10.2), pure.

Each is kept in the state store as a JSON record of strings (shared by every instance)
and rebuilt here; `from_store` raises `KeyError` or `ValueError` on a record that is
not one, which the reader logs and skips.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from crcr.relay.allowlist.model import Level

DECLINE, OVERRIDE, EPISODE, LEVEL = "decline", "override", "episode", "level"
"""The kinds of governance records in the state store."""

EPISODE_KINDS = ("level", "demotion", "decline", "override")
"""What an episode of the level history is about."""


def moment(text: object) -> datetime:
    """An ISO-8601 time from the store, in UTC (a naive one is taken as UTC)."""
    found = datetime.fromisoformat(str(text))
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)


def iso(at: datetime) -> str:
    """A time as the store and the JSON keep it."""
    return at.astimezone(UTC).isoformat()


@dataclass(frozen=True)
class Decline:
    """A demotion pull request closed unmerged: no demotion for the backend until `until`."""

    repo: str
    by: str
    at: datetime
    until: datetime
    pr_url: str | None = None

    def in_force(self, now: datetime) -> bool:
        """Whether new demotions of the backend are still snoozed."""
        return now < self.until

    def to_store(self) -> dict[str, Any]:
        """The state store's record."""
        return {
            "repo": self.repo,
            "by": self.by,
            "at": iso(self.at),
            "until": iso(self.until),
            "pr_url": self.pr_url,
        }

    @classmethod
    def from_store(cls, record: Mapping[str, Any]) -> Decline:
        """Rebuild a decline."""
        url = record.get("pr_url")
        return cls(
            str(record["repo"]),
            str(record["by"]),
            moment(record["at"]),
            moment(record["until"]),
            str(url) if url else None,
        )


@dataclass(frozen=True)
class Override:
    """An operator's temporary downgrade (RFC-0050): it beats the allowlist until `until`."""

    repo: str
    level: Level
    until: datetime
    reason: str
    by: str
    at: datetime

    def in_force(self, now: datetime) -> bool:
        """Whether the downgrade still holds."""
        return now < self.until

    def to_store(self) -> dict[str, Any]:
        """The state store's record."""
        return {
            "repo": self.repo,
            "level": str(self.level),
            "until": iso(self.until),
            "reason": self.reason,
            "by": self.by,
            "at": iso(self.at),
        }

    @classmethod
    def from_store(cls, record: Mapping[str, Any]) -> Override:
        """Rebuild an override."""
        return cls(
            str(record["repo"]),
            Level[str(record["level"])],
            moment(record["until"]),
            str(record.get("reason") or ""),
            str(record.get("by") or ""),
            moment(record["at"]),
        )


@dataclass(frozen=True)
class Episode:
    """One stretch of a backend's level history: a level, demotion, decline or override.

    `end` is None while it lasts; `detail` says what it was (`L3`, `L4 → L3`, the
    override's reason, who declined).
    """

    repo: str
    kind: str
    start: datetime
    end: datetime | None
    detail: str

    @property
    def key(self) -> str:
        """Its key in the state store: one per (repo, kind, start)."""
        return f"{self.repo.lower()}|{self.kind}|{iso(self.start)}"

    def to_store(self) -> dict[str, Any]:
        """The state store's record."""
        return {
            "repo": self.repo,
            "kind": self.kind,
            "start": iso(self.start),
            "end": None if self.end is None else iso(self.end),
            "detail": self.detail,
        }

    @classmethod
    def from_store(cls, record: Mapping[str, Any]) -> Episode:
        """Rebuild an episode."""
        kind = str(record["kind"])
        if kind not in EPISODE_KINDS:
            raise ValueError(f"unknown episode kind {kind!r}")
        end = record.get("end")
        return cls(
            str(record["repo"]),
            kind,
            moment(record["start"]),
            None if end is None else moment(end),
            str(record.get("detail") or ""),
        )


def treated_as(
    level: Level, demoted_from: Level | None, override: Override | None, now: datetime
) -> Level:
    """The level a backend's *new* jobs are treated at (SPEC §10.1, §10.2).

    An override in force beats the allowlist (never raising it); a temporary demotion
    from the backend's own level lowers it by one. The lower of the two holds.
    """
    treated = level
    if demoted_from is not None and demoted_from == level:
        treated = Level(level - 1)
    if override is not None and override.in_force(now):
        treated = min(treated, override.level)
    return treated

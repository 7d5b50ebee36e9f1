"""The level history as episodes (SPEC §10.2), kept in the state store.

Every temporary demotion, decline, override and allowlist level of a backend is one
episode with a start and (once over) an end, so `/crcr/levels` can draw a timeline
and a demotion that came and went is not lost between two reports. The allowlist's
levels are followed each sweeper pass: a level that changed closes one episode and
opens the next. The newest `KEEP` episodes per backend are kept.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime

from crcr.relay.allowlist.model import Allowlist
from crcr.relay.levels.standing import EPISODE, EPISODE_KINDS, LEVEL, Episode, iso
from crcr.stores.roles import GovernanceRecords

log = logging.getLogger(__name__)

KEEP = 100
"""Episodes kept per backend (a weekly flap for two years)."""


class LevelHistory:
    """Opens, closes and reads the episodes of every backend's level history."""

    def __init__(self, store: GovernanceRecords) -> None:
        self._store = store

    async def episodes(self) -> dict[str, tuple[Episode, ...]]:
        """Every backend's episodes by lower-cased repo, oldest first."""
        found: dict[str, list[Episode]] = {}
        for key, record in (await self._store.governance(EPISODE)).items():
            try:
                episode = Episode.from_store(record)
            except (KeyError, ValueError):
                log.warning("ignoring a malformed level-history episode %s", key)
                continue
            found.setdefault(episode.repo.lower(), []).append(episode)
        return {repo: tuple(sorted(eps, key=_order)) for repo, eps in found.items()}

    async def open(self, repo: str, kind: str, start: datetime, detail: str) -> None:
        """Start an episode (one already open of the same kind is closed first)."""
        await self.close(repo, kind, start)
        await self.record(Episode(repo, kind, start, None, detail))

    async def record(self, episode: Episode) -> None:
        """Keep an episode as it is (a decline's, say, whose end is known at its start)."""
        await self._store.put_governance(EPISODE, episode.key, episode.to_store())
        await self._prune(episode.repo)

    async def close(self, repo: str, kind: str, end: datetime) -> None:
        """End the open episodes of `kind` for `repo`."""
        for episode in (await self.episodes()).get(repo.lower(), ()):
            if episode.kind == kind and episode.end is None:
                closed = Episode(episode.repo, kind, episode.start, end, episode.detail)
                await self._store.put_governance(EPISODE, closed.key, closed.to_store())

    async def follow_levels(self, allowlist: Allowlist, now: datetime) -> None:
        """Open a `level` episode for every allowlist level not yet followed, close gone ones."""
        known: Mapping[str, dict[str, object]] = await self._store.governance(LEVEL)
        listed = {entry.repo.lower(): entry for entry in allowlist.entries}
        for key, entry in listed.items():
            record = known.get(key)
            if record is not None and record.get("level") == str(entry.level):
                continue
            await self._store.put_governance(
                LEVEL, key, {"repo": entry.repo, "level": str(entry.level), "since": iso(now)}
            )
            await self.open(entry.repo, "level", now, str(entry.level))
        for key, record in known.items():
            if key not in listed:
                await self.close(str(record.get("repo") or key), "level", now)
                await self._store.remove_governance(LEVEL, key)

    async def _prune(self, repo: str) -> None:
        episodes = (await self.episodes()).get(repo.lower(), ())
        for episode in episodes[: max(0, len(episodes) - KEEP)]:
            await self._store.remove_governance(EPISODE, episode.key)


def _order(episode: Episode) -> tuple[datetime, int]:
    """Oldest first; at one moment, the level before what happened to it."""
    return episode.start, EPISODE_KINDS.index(episode.kind)

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
        await self._open(await self._of(repo), Episode(repo, kind, start, None, detail))

    async def record(self, episode: Episode) -> None:
        """Keep an episode as it is (a decline's, say, whose end is known at its start)."""
        await self._record(await self._of(episode.repo), episode)

    async def close(self, repo: str, kind: str, end: datetime) -> None:
        """End the open episodes of `kind` for `repo`."""
        await self._close(await self._of(repo), kind, end)

    async def follow_levels(self, allowlist: Allowlist, now: datetime) -> None:
        """Open a `level` episode for every allowlist level not yet followed, close gone ones.

        The episodes are read once for the whole pass, not once per backend: a first pass
        over a thousand-entry allowlist would otherwise reread every episode per entry.
        """
        known: Mapping[str, dict[str, object]] = await self._store.governance(LEVEL)
        listed = {entry.repo.lower(): entry for entry in allowlist.entries}
        changed = [
            entry
            for key, entry in listed.items()
            if (known.get(key) or {}).get("level") != str(entry.level)
        ]
        gone = [key for key in known if key not in listed]
        if not changed and not gone:
            return
        episodes = await self.episodes()
        for entry in changed:
            await self._store.put_governance(
                LEVEL,
                entry.repo.lower(),
                {"repo": entry.repo, "level": str(entry.level), "since": iso(now)},
            )
            opened = Episode(entry.repo, "level", now, None, str(entry.level))
            await self._open(episodes.get(entry.repo.lower(), ()), opened)
        for key in gone:
            await self._close(episodes.get(key, ()), "level", now)
            await self._store.remove_governance(LEVEL, key)

    async def _of(self, repo: str) -> tuple[Episode, ...]:
        return (await self.episodes()).get(repo.lower(), ())

    async def _open(self, episodes: tuple[Episode, ...], episode: Episode) -> None:
        """`open` given the backend's episodes as read."""
        await self._record(await self._close(episodes, episode.kind, episode.start), episode)

    async def _close(
        self, episodes: tuple[Episode, ...], kind: str, end: datetime
    ) -> tuple[Episode, ...]:
        """`close` given the backend's episodes as read; returns them as they are now."""
        current = []
        for episode in episodes:
            if episode.kind == kind and episode.end is None:
                episode = Episode(episode.repo, kind, episode.start, end, episode.detail)
                await self._store.put_governance(EPISODE, episode.key, episode.to_store())
            current.append(episode)
        return tuple(current)

    async def _record(self, episodes: tuple[Episode, ...], episode: Episode) -> None:
        """`record` given the backend's episodes as read: keep it, drop the oldest past `KEEP`."""
        await self._store.put_governance(EPISODE, episode.key, episode.to_store())
        kept = sorted({old.key: old for old in (*episodes, episode)}.values(), key=_order)
        for old in kept[: max(0, len(kept) - KEEP)]:
            await self._store.remove_governance(EPISODE, old.key)


def _order(episode: Episode) -> tuple[datetime, int]:
    """Oldest first; at one moment, the level before what happened to it."""
    return episode.start, EPISODE_KINDS.index(episode.kind)

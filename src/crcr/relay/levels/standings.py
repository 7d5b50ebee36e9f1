"""The relay's answer to the HUD's lookups: each backend's level and standing (SPEC §10.2).

One source for every place that shows a backend's level: the allowlist in force gives
its level, the book (state store) its demotion, decline, override and episodes, and
`standing.treated_as` the level its new jobs are treated at — the same rule the
check-run publisher applies. The HUD's level status reads these; so do the API,
`/crcr/levels`, the backend page, `crcr levels status` and `crcr doctor`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from crcr.hud.levels import providers as hud
from crcr.relay.allowlist.model import Allowlist
from crcr.relay.allowlist.source import AllowlistUnavailable
from crcr.relay.levels.book import DemotionBook
from crcr.relay.levels.standing import Episode, treated_as

AllowlistReader = Callable[[], Awaitable[Allowlist]]


def allowlist_levels(allowlist: AllowlistReader) -> hud.LevelLookup:
    """The allowlist's levels by repo, for the HUD's level status.

    None while no allowlist can be had: the status then shows the levels last reported
    rather than failing the pages that show it.
    """

    async def levels() -> dict[str, str] | None:
        try:
            found = await allowlist()
        except AllowlistUnavailable:
            return None
        return {entry.repo: str(entry.level) for entry in found.entries}

    return levels


class StandingsForHud:
    """The HUD's `GovernanceLookup` (and `DemotionLookup`), from the book and the allowlist."""

    def __init__(self, book: DemotionBook, allowlist: AllowlistReader) -> None:
        self._book = book
        self._allowlist = allowlist

    async def demotions(self) -> Mapping[str, hud.Demotion]:
        found = await self._book.demotions()
        return {repo: hud.Demotion(d.since, d.pr_url) for repo, d in found.items()}

    async def standings(self) -> Mapping[str, hud.Standing]:
        try:
            allowlist = await self._allowlist()
        except AllowlistUnavailable:
            return {}
        governance, now = await self._book.governance(), self._book.now()
        episodes = await self._book.history.episodes()
        standings = {}
        for entry in allowlist.entries:
            key = entry.repo.lower()
            demotion = governance.demotions.get(key)
            if demotion is not None and demotion.from_level != entry.level:
                demotion = None  # the allowlist moved on; the next refresh ends it
            decline = governance.declined(key, now)
            override = governance.override(key, now)
            level = treated_as(
                entry.level, demotion.from_level if demotion else None, override, now
            )
            standings[entry.repo] = hud.Standing(
                treated_as=str(level),
                demotion=None
                if demotion is None
                else hud.Demotion(demotion.since, demotion.pr_url),
                declined=None
                if decline is None
                else hud.Decline(decline.by, decline.at, decline.until),
                override=None
                if override is None
                else hud.Override(
                    str(override.level), override.until, override.reason, override.by
                ),
                episodes=tuple(_episode(e) for e in episodes.get(key, ())),
                level=str(entry.level),
            )
        return standings


def _episode(episode: Episode) -> hud.Episode:
    return hud.Episode(episode.kind, episode.start, episode.end, episode.detail)

"""What the level status is given by its host: backends' levels and their governance.

The HUD cannot read the allowlist or the relay's state store itself (it may run alone);
`crcr.runtime` passes it these when the relay runs beside it. `GovernanceLookup` is
the one source of a backend's standing — the level its new jobs are treated at, its
temporary demotion, a declined demotion, an override and the level history's episodes
(SPEC §10.2) — which the API, `/crcr/levels`, the backend page, `crcr levels status`
and `crcr doctor` all show. `DemotionLookup` is the older, narrower form.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

# Every backend's level ("L1".."L4") by repo, as the allowlist in force says; None when
# no allowlist can be read (the status then takes the levels last reported).
LevelLookup = Callable[[], Awaitable[Mapping[str, str] | None]]


@dataclass(frozen=True)
class Demotion:
    """A backend treated one level lower until its criteria recover (SPEC §10.1)."""

    since: datetime
    pr_url: str | None


@dataclass(frozen=True)
class Decline:
    """A demotion declined by closing its pull request; none again until `until`."""

    by: str
    at: datetime
    until: datetime


@dataclass(frozen=True)
class Override:
    """An operator's downgrade of a backend to `level` until `until` (RFC-0050)."""

    level: str
    until: datetime
    reason: str
    by: str


@dataclass(frozen=True)
class Episode:
    """One stretch of the level history: `level`, `demotion`, `decline` or `override`."""

    kind: str
    start: datetime
    end: datetime | None
    detail: str


@dataclass(frozen=True)
class Standing:
    """A backend's governance: its level, the level its new jobs are treated at, and why."""

    treated_as: str
    demotion: Demotion | None = None
    declined: Decline | None = None
    override: Override | None = None
    episodes: tuple[Episode, ...] = ()
    level: str | None = None  # the allowlist's

    @property
    def lowered(self) -> bool:
        """Whether new jobs are treated below the allowlist's level."""
        return self.level is not None and self.treated_as != self.level


class DemotionLookup(Protocol):
    """Where temporary demotions are kept (the relay's state store)."""

    async def demotions(self) -> Mapping[str, Demotion]:
        """Every backend under temporary demotion, by repo."""
        ...


class GovernanceLookup(Protocol):
    """Where every backend's standing is kept (the relay's state store)."""

    async def standings(self) -> Mapping[str, Standing]:
        """Every allowlisted backend's standing, by repo (any case)."""
        ...

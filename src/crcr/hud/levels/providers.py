"""What the level status is given by its host: backends' levels and temporary demotions.

The HUD cannot read the allowlist or the relay's state store itself (it may run alone);
`crcr.runtime` passes it these when the relay runs beside it.
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


class DemotionLookup(Protocol):
    """Where temporary demotions are kept (the relay's state store)."""

    async def demotions(self) -> Mapping[str, Demotion]:
        """Every backend under temporary demotion, by repo."""
        ...

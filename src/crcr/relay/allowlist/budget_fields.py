"""An entry's hardware budget (SPEC §15): `max_concurrent`, `paths`, `paths_ignore`.

Read here, beside the allowlist's other field rules, so that the model only gathers
them: a typo in a budget must be refused with the entry and the field named, like any
other field, because a silently ignored cap would let a PR storm flood a backend's few
machines.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from crcr.relay.allowlist.syntax import type_name

BUDGET_FIELDS = ("max_concurrent", "paths", "paths_ignore")

MAX_CONCURRENT_CEILING = 10_000
"""A cap above this is a typo, not a fleet."""


@dataclass(frozen=True)
class EntryBudget:
    """What an entry rations: unfinished dispatches at once, and the files it cares for.

    The default costs nothing: no cap, no path filter.
    """

    max_concurrent: int | None = None
    paths: tuple[str, ...] = ()
    paths_ignore: tuple[str, ...] = ()

    @property
    def filters_paths(self) -> bool:
        """Whether a PR's changed files decide if this entry is dispatched to."""
        return bool(self.paths or self.paths_ignore)


NO_BUDGET = EntryBudget()


def read_budget(raw: object, problem: Callable[[str], None]) -> EntryBudget:
    """The budget an entry's mapping sets; each problem names its field."""
    if not isinstance(raw, Mapping) or not any(name in raw for name in BUDGET_FIELDS):
        return NO_BUDGET
    return EntryBudget(
        _max_concurrent(raw.get("max_concurrent"), problem),
        _globs("paths", raw.get("paths"), problem),
        _globs("paths_ignore", raw.get("paths_ignore"), problem),
    )


def _max_concurrent(raw: object, problem: Callable[[str], None]) -> int | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int) or not 1 <= raw <= MAX_CONCURRENT_CEILING:
        problem(
            f"max_concurrent must be a whole number from 1 to {MAX_CONCURRENT_CEILING},"
            f" got {raw!r} ({type_name(raw)})"
        )
        return None
    return raw


def _globs(name: str, raw: object, problem: Callable[[str], None]) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not raw:
        problem(f"{name} must be a non-empty list of glob patterns, got {type_name(raw)}")
        return ()
    globs: list[str] = []
    for item in raw:
        if not isinstance(item, str) or not item.strip():
            problem(f"{name} must hold non-empty glob strings, got {type_name(item)}")
            continue
        globs.append(item.strip())
    return tuple(globs)

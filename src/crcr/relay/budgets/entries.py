"""Which allowlist entries carry a budget, found once per allowlist.

The webhook asks on every event; an allowlist without any budget must cost no more than
one dictionary lookup, so the answer is kept beside each (immutable) allowlist.
"""

from __future__ import annotations

from collections.abc import Mapping
from weakref import ref

from crcr.relay.allowlist.model import Allowlist, AllowlistEntry

_LAST: list[tuple[ref[Allowlist], Mapping[str, AllowlistEntry]]] = []
"""The answer for the allowlist in force (an allowlist is replaced, never changed)."""


def budgeted_entries(allowlist: Allowlist) -> Mapping[str, AllowlistEntry]:
    """Lower-cased repo → entry, for the entries with a cap or a path filter."""
    if _LAST and _LAST[0][0]() is allowlist:
        return _LAST[0][1]
    found = {
        entry.repo.lower(): entry
        for entry in allowlist.entries
        if entry.budget.max_concurrent is not None or entry.budget.filters_paths
    }
    _LAST[:] = [(ref(allowlist), found)]
    return found


def capped_entries(allowlist: Allowlist) -> list[AllowlistEntry]:
    """The entries with a `max_concurrent`."""
    return [e for e in budgeted_entries(allowlist).values() if e.budget.max_concurrent is not None]

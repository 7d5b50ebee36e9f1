"""One capped pool's state and its rules, in plain Python: the SQLite store applies them
inside a write transaction; the Redis store's Lua script (`stores.redis.budget_slots`)
is the same rules, line for line, so the contract suite holds both to one behaviour.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from crcr.stores.keys import decode, encode
from crcr.stores.pull_head_order import is_newer_than_waiting
from crcr.stores.roles.budget_slots import PoolView, SlotChange


@dataclass
class Pool:
    """`held`: holder → until (epoch ms); `jobs`: holder → its unfinished jobs;
    `line`: [place, holder, payload as JSON text(, its head's order)], oldest first."""

    held: dict[str, int] = field(default_factory=dict)
    jobs: dict[str, list[str]] = field(default_factory=dict)
    line: list[list[Any]] = field(default_factory=list)

    @classmethod
    def load(cls, text: str | None) -> Pool:
        """The pool a stored text holds (an absent one is empty)."""
        if not text:
            return cls()
        raw = decode(text)
        # Lua's cjson writes an empty array as `{}`: every part reads empty either way.
        return cls(
            {str(k): int(v) for k, v in (raw.get("held") or {}).items()},
            {str(k): list(v or []) for k, v in (raw.get("jobs") or {}).items()},
            [list(item) for item in (raw.get("line") or [])],
        )

    def dump(self) -> str:
        """The text to store."""
        return encode({"held": self.held, "jobs": self.jobs, "line": self.line})

    def view(self) -> PoolView:
        """What the backend page shows."""
        return PoolView(
            {holder: until / 1000 for holder, until in self.held.items()},
            [(item[0], decode(item[2])) for item in self.line],
        )

    def join(
        self,
        place: str,
        holder: str,
        payload: Mapping[str, Any],
        order: Mapping[str, str] | None = None,
    ) -> list[Any]:
        """Queue (or replace the waiter at `place`, unless `order` says the waiter is
        the newer head); returns the payloads taken out of line, this one if turned away."""
        if holder in self.held:
            return []
        text = encode(dict(payload))
        mine = [place, holder, text] + ([dict(order)] if order else [])
        for index, item in enumerate(self.line):
            if item[0] == place:
                waiting_order = item[3] if len(item) > 3 else None
                if order and waiting_order and not is_newer_than_waiting(order, waiting_order):
                    return [] if item[1] == holder else [decode(text)]
                self.line[index] = mine
                return [] if item[1] == holder else [decode(item[2])]
        self.line.append(mine)
        return []

    def note(self, holder: str, job: str, *, finished: bool, now_ms: int, hold_ms: int) -> None:
        """A job of `holder` started or finished."""
        if holder not in self.held:
            return
        open_jobs = self.jobs.setdefault(holder, [])
        if not finished:
            if job not in open_jobs:
                open_jobs.append(job)
            self.held[holder] = now_ms + hold_ms
            return
        if job in open_jobs:
            open_jobs.remove(job)
        if not open_jobs:
            self.free(holder)

    def free(self, holder: str) -> list[Any]:
        """`holder` leaves its slot or the line; returns its payload when it was waiting."""
        self.held.pop(holder, None)
        self.jobs.pop(holder, None)
        left = [decode(item[2]) for item in self.line if item[1] == holder]
        self.line = [item for item in self.line if item[1] != holder]
        return left

    def admit(self, limit: int, now_ms: int, hold_ms: int) -> list[Any]:
        """Drop holders past their time, then fill free slots from the head of the line."""
        for holder, until in list(self.held.items()):
            if until <= now_ms:
                self.free(holder)
        admitted = []
        while self.line and len(self.held) < limit:
            item = self.line.pop(0)
            self.held[item[1]] = now_ms + hold_ms
            admitted.append(decode(item[2]))
        return admitted


def change(admitted: list[Any], replaced: list[Any]) -> SlotChange:
    """The role's answer."""
    return SlotChange(tuple(admitted), tuple(replaced))

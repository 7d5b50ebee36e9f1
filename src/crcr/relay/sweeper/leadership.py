"""The sweeper's leader lock, held by a heartbeat: short, renewed often, lost quickly.

Only the work that must not run on two instances at once needs a leader: the overdue
sweep (zombie timeouts, redone completions) and the level syncs. The retry queues are
drained by every instance under their items' leases. The lock is short (`LOCK_TTL`)
and renewed every `RENEW_EVERY` seconds by a task of its own, independent of how long
a pass takes, so that when the leader dies (SIGKILL, a lost host) another instance
leads within `LOCK_TTL + RENEW_EVERY` seconds (issue 22: it used to be a minute).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable

from crcr.stores.roles import LeaderLock
from crcr.stores.state import StateStoreUnavailable

log = logging.getLogger(__name__)

LOCK_NAME = "sweeper"
LOCK_TTL = 6.0
"""Seconds the leader lock lives without renewal: what a dead leader costs at most."""
RENEW_EVERY = 2.0
"""Seconds between renewals (and between a follower's attempts to take the lock): three
renewals fit in one lock lifetime, so one slow store round trip does not lose it."""


def instance_name() -> str:
    """Who holds the lock, readable by an operator: host, process id, and a random tail
    (a restarted process on the same host may reuse a pid)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Leadership:
    """Whether this instance leads, as of its last renewal.

    `leads` is judged on this process's monotonic clock from the moment a successful
    renewal was *sent*: the lock in the store lives at least that long, so an instance
    that believes it leads does (a stalled process stops believing it when its own
    lock would have lapsed).
    """

    def __init__(
        self,
        store: LeaderLock,
        owner: str,
        *,
        ttl: float = LOCK_TTL,
        renew_every: float = RENEW_EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self.owner = owner
        self.ttl = ttl
        self.renew_every = renew_every
        self._clock = clock
        self._valid_until = 0.0
        self.gained = asyncio.Event()
        """Set whenever this instance starts leading; the sweeper clears it when it runs."""

    @property
    def leads(self) -> bool:
        """Whether the lock was ours at a renewal recent enough that it cannot have lapsed."""
        return self._clock() < self._valid_until

    async def renew(self) -> bool:
        """Take or renew the lock; whether this instance now leads."""
        sent = self._clock()
        before = self.leads
        try:
            taken = await self._store.acquire_lock(LOCK_NAME, self.owner, self.ttl)
        except StateStoreUnavailable as exc:
            log.warning("sweeper lock: state store unavailable: %s", exc)
            taken = False
        self._valid_until = sent + self.ttl if taken else 0.0
        if taken and not before:
            log.info("sweeper: this instance leads now", extra={"instance": self.owner})
            self.gained.set()
        elif before and not taken:
            log.info("sweeper: this instance no longer leads", extra={"instance": self.owner})
        return taken

    async def release(self) -> None:
        """Give the lock up at once, so that another instance leads without waiting."""
        was_leading = self._valid_until > 0.0
        self._valid_until = 0.0
        if was_leading:
            with contextlib.suppress(StateStoreUnavailable):
                await self._store.release_lock(LOCK_NAME, self.owner)

    async def keep(self, stop: asyncio.Event) -> None:
        """Renew every `renew_every` seconds until `stop`, then release the lock."""
        try:
            while not stop.is_set():
                await self.renew()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=self.renew_every)
        finally:
            await self.release()

"""Watch states and raise an alert per change (SPEC §13): the leader's step after each pass.

Each pass judges the health document afresh and compares every backend's state, and
the canary's, with the one last recorded in the state store. A change raises one alert:
queued for each sink, kept in the alert log (`GET /api/crcr/alerts`), counted.

Deduplicated across instances: a check runs under its own short lock in the state
store, so two instances never compare against the same recorded state; the second one
to check sees the state the first recorded, and raises nothing. An alert is queued
before its new state is recorded: a relay that dies in between raises it again on the
next pass (at least once, never lost).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol
from urllib.parse import quote

from crcr.hud.health.memo import HealthMemo
from crcr.relay.alerts.alert import BACKEND_STATE, CANARY, Alert, transition
from crcr.relay.alerts.metrics import ALERTS
from crcr.relay.alerts.sinks import AlertSinks, queue_alert
from crcr.stores.roles import AuditLog, Caches, LeaderLock, RetryQueue

log = logging.getLogger(__name__)

WATCH_LOCK = "alerts-watch"
LOCK_SECONDS = 60.0
STATE_NAMESPACE = "alert-state"
STATE_SECONDS = 90 * 86400.0
"""How long a recorded state is kept; a backend silent past it starts afresh (no alert)."""
ALERT_LOG = "(alerts)"
"""The audit trail's bucket that keeps the alert log, within `CRCR_AUDIT_*`'s bounds."""


class AlertStore(Caches, LeaderLock, RetryQueue, AuditLog, Protocol):
    """The state store's roles the watch uses."""


@dataclass
class AlertWatch:
    """Compare states with the recorded ones; raise an alert per change."""

    store: AlertStore
    memo: HealthMemo
    sinks: AlertSinks
    instance: str
    link_base: str | None
    keep_days: int
    keep_entries: int
    clock: Callable[[], float] = time.time
    # The store's lock is per instance (re-entrant for its owner): this one keeps two
    # checks of one instance (the sweeper's, a caller's) from comparing at once.
    _checking: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)

    async def __call__(self) -> None:
        """The sweeper's leader step: `check`."""
        await self.check()

    async def check(self) -> list[Alert]:
        """Raise the alerts of the changes since the last check; what was raised."""
        async with self._checking:
            return await self._check()

    async def _check(self) -> list[Alert]:
        if not await self.store.acquire_lock(WATCH_LOCK, self.instance, LOCK_SECONDS):
            return []
        try:
            report = await self.memo.fresh()
            at = datetime.fromtimestamp(self.clock(), UTC)
            followed = [(BACKEND_STATE, b.repo, str(b.state)) for b in report.backends]
            if report.canary is not None:
                followed.append((CANARY, report.canary, str(report.status)))
            raised = []
            for kind, repo, state in followed:
                key = f"{kind}:{repo.lower()}"
                before = await self.store.cache_get(STATE_NAMESPACE, key)
                alert = transition(kind, repo, before, state, at, self._url(kind, repo))
                if alert is not None:
                    await self._raise(alert)
                    raised.append(alert)
                if before != state:
                    await self.store.cache_set(STATE_NAMESPACE, key, state, STATE_SECONDS)
            return raised
        finally:
            await self.store.release_lock(WATCH_LOCK, self.instance)

    async def _raise(self, alert: Alert) -> None:
        body = alert.as_json()
        await queue_alert(self.store, self.sinks, alert.alert_id, body)
        entry = {"bucket": ALERT_LOG, "kind": "alert", "at": alert.at.timestamp(), "alert": body}
        await self.store.append_audit(
            [entry], keep_seconds=self.keep_days * 86400.0, keep_per_repo=self.keep_entries
        )
        ALERTS.labels(kind=alert.kind, to=alert.after).inc()
        log.info(
            "alert: %s %s is %s (was %s)",
            alert.kind,
            alert.repo,
            alert.after,
            alert.before,
            extra={"repo": alert.repo},
        )

    def _url(self, kind: str, repo: str) -> str | None:
        if self.link_base is None:
            return None
        page = "health" if kind == CANARY else quote(repo)
        return f"{self.link_base}/crcr/{page}"


async def recent_alerts(store: AuditLog, limit: int) -> list[dict[str, Any]]:
    """The last `limit` alerts raised, newest first."""
    entries = await store.audit_entries(ALERT_LOG, limit=limit)
    return [entry["alert"] for entry in entries if isinstance(entry.get("alert"), dict)]

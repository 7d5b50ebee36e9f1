"""The health document assembled: the HUD's rows, and what the relay dispatched (SPEC §13).

Only the relay knows what it sent: probes are the canary's dispatches and a backend is
stale only if dispatches went to it. Both come from the audit trail (every dispatch
outcome per downstream, SPEC §12) — shared by all instances, bounded, and already
written off the request path — so health adds no write of its own to a dispatch.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from anyio import to_thread
from sqlalchemy import Engine

from crcr.config.settings import Settings
from crcr.hud.health.abandoned import Abandoned, abandoned
from crcr.hud.health.canary import JUDGED_PROBES, ProbeDispatch, judge_canary
from crcr.hud.health.nightly import judge_nightly
from crcr.hud.health.report import BackendHealth, HealthReport
from crcr.hud.health.rows import last_reports, nightly_runs, probe_jobs, recent_completed_jobs
from crcr.hud.health.states import COUNTED_EVENTS, CompletedJob, Silence, backend_state
from crcr.relay.allowlist.model import Allowlist, Level
from crcr.relay.audit.entries import DISPATCH
from crcr.stores.roles import AuditLog, Dispatches

PROBES_READ = 20
"""Newest dispatches to the canary looked at: the 5 judged, and those still running."""
AUDIT_READ = 1000


class HealthStore(AuditLog, Dispatches, Protocol):
    """The state store's roles health reads."""


def _at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def first_dispatches(entries: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Each delivery's first dispatch attempt (sent, queued or failed) in audit entries.

    A failed dispatch counts: an App that lost its installation is what health is for.
    """
    first: dict[str, float] = {}
    for entry in entries:
        if entry.get("kind") != DISPATCH or entry.get("decision") == "dropped":
            continue
        delivery, at = str(entry.get("delivery_id")), float(entry["at"])
        first[delivery] = min(at, first.get(delivery, at))
    return first


@dataclass
class HealthAssembler:
    """Builds the `HealthReport` from the results store and the state store."""

    store: HealthStore
    engine: Engine
    settings: Settings
    allowlist: Callable[[], Awaitable[Allowlist]]
    clock: Callable[[], float] = time.time

    async def report(self) -> HealthReport:
        """The document as of now."""
        now = _at(self.clock())
        canary = self.settings.canary_repo
        verdict = nightly = None
        if canary is not None:
            probes = await self._probes(canary)
            ids = [probe.delivery_id for probe in probes]
            jobs = await to_thread.run_sync(probe_jobs, self.engine, canary, ids)
            verdict = judge_canary(
                probes, jobs, now=now, deadline_seconds=self.settings.canary_deadline
            )
            runs = await to_thread.run_sync(nightly_runs, self.engine, canary, JUDGED_PROBES)
            nightly = judge_nightly(runs)
        return HealthReport(canary, verdict, await self._backends(now), nightly)

    async def _probes(self, canary: str) -> list[ProbeDispatch]:
        entries = await self.store.audit_entries(canary.lower(), limit=AUDIT_READ)
        first = first_dispatches(entries)
        newest = sorted(first, key=first.__getitem__, reverse=True)[:PROBES_READ]
        records = await asyncio.gather(*(self.store.get_dispatch(d, canary) for d in newest))
        return [
            ProbeDispatch(delivery, _event_type(record), _at(first[delivery]))
            for delivery, record in zip(newest, records, strict=True)
        ]

    async def _backends(self, now: datetime) -> tuple[BackendHealth, ...]:
        reported = await to_thread.run_sync(last_reports, self.engine)
        # L1 results are answered but never recorded (SPEC §3): an L1 backend would read
        # as stale forever, so only L2 and above are judged unless they reported anyway.
        listed = set((await self.allowlist()).repos_at_least(Level.L2))
        repos = sorted(listed | set(reported))
        after = self.settings.alert_after
        canary = (self.settings.canary_repo or "").lower()
        jobs: list[list[CompletedJob]] = await to_thread.run_sync(
            lambda: [
                recent_completed_jobs(self.engine, repo, after, canary=repo.lower() == canary)
                for repo in repos
            ]
        )
        silences = await asyncio.gather(*(self._silence(r, reported.get(r)) for r in repos))
        return tuple(
            BackendHealth(
                repo,
                backend_state(
                    own,
                    silence,
                    now=now,
                    alert_after=after,
                    stale_seconds=self.settings.stale_seconds,
                ),
                silence.last_report_at,
            )
            for repo, own, silence in zip(repos, jobs, silences, strict=True)
        )

    async def backend(self, repo: str, events: frozenset[str] | None = None) -> BackendHealth:
        """One backend's health as of now; `events` judges only those jobs (a badge's)."""
        now = _at(self.clock())
        judged = COUNTED_EVENTS if events is None else events
        after = self.settings.alert_after
        reported = await to_thread.run_sync(last_reports, self.engine)
        last = next((at for name, at in reported.items() if name.lower() == repo.lower()), None)
        canary = repo.lower() == (self.settings.canary_repo or "").lower()
        jobs = await to_thread.run_sync(
            lambda: recent_completed_jobs(self.engine, repo, after, judged, canary=canary)
        )
        silence = await self._silence(repo, last)
        state = backend_state(
            jobs,
            silence,
            now=now,
            alert_after=after,
            stale_seconds=self.settings.stale_seconds,
            events=judged,
        )
        return BackendHealth(repo, state, last)

    async def abandoned(self) -> tuple[datetime, list[Abandoned]]:
        """The allowlisted backends above L1 stale for 28 days, as of now (SPEC §13)."""
        now = _at(self.clock())
        reported = await to_thread.run_sync(last_reports, self.engine)
        by_lower = {repo.lower(): at for repo, at in reported.items()}
        repos = (await self.allowlist()).repos_at_least(Level.L2)
        silences = await asyncio.gather(*(self._silence(r, by_lower.get(r.lower())) for r in repos))
        found = [abandoned(r, s, now) for r, s in zip(repos, silences, strict=True)]
        return now, [backend for backend in found if backend is not None]

    async def known_spelling(self, repo: str) -> str | None:
        """`repo` as the results store spells it, or None when it never reported."""
        reported = await to_thread.run_sync(last_reports, self.engine)
        return next((name for name in reported if name.lower() == repo.lower()), None)

    async def _silence(self, repo: str, last_report: datetime | None) -> Silence:
        since = 0.0 if last_report is None else last_report.timestamp()
        entries = await self.store.audit_entries(repo.lower(), since=since, limit=AUDIT_READ)
        sent = [at for at in first_dispatches(entries).values() if at > since]
        return Silence(last_report, _at(min(sent)) if sent else None)


def _event_type(record: Mapping[str, Any] | None) -> str:
    """The dispatch record's event type; `unknown` once the record has expired."""
    context = (record or {}).get("context")
    if isinstance(context, Mapping) and isinstance(context.get("event_type"), str):
        return str(context["event_type"])
    return "unknown"

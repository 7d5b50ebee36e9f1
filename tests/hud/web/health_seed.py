"""A relay health document for the page tests: Degraded, so every section is drawn."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

from crcr.hud.health.canary import (
    CanaryStatus,
    CanaryVerdict,
    JudgedProbe,
    ProbeDispatch,
    ProbeJob,
    ProbeState,
    Unexpected,
)
from crcr.hud.health.memo import HealthMemo
from crcr.hud.health.nightly import NightlyRun, judge_nightly
from crcr.hud.health.report import BackendHealth, HealthReport
from crcr.hud.health.states import BackendState

CANARY = "acme/canary"


def degraded_report() -> HealthReport:
    """One probe of each state, one unexpected job, one backend in each state."""
    now = datetime.now(UTC)
    probes = [
        ProbeDispatch(f"crcr-probe-{n}", event, now - timedelta(hours=n, minutes=5))
        for n, event in enumerate(["crcr_probe", "pull_request", "crcr_probe", "crcr_probe"])
    ]
    states = [ProbeState.RUNNING, ProbeState.FAILED, ProbeState.OVERDUE, ProbeState.PASSED]
    verdict = CanaryVerdict(
        CanaryStatus.DEGRADED,
        tuple(JudgedProbe(p, s) for p, s in zip(probes, states, strict=True)),
        (Unexpected(probes[1].delivery_id, "probe-xfail", "success", "failure"),),
        (probes[2],),
    )
    backends = tuple(
        BackendHealth(f"acme/{state}", state, None if state is BackendState.NO_DATA else now)
        for state in BackendState
    )
    return HealthReport(CANARY, verdict, backends, judge_nightly(nightly_runs(now)))


def nightly_runs(now: datetime) -> list[NightlyRun]:
    """Three nights: the newest with an unexpected job, the others as they should be."""
    runs = []
    for night in range(3):
        sha = f"{night + 1:x}" * 40
        conclusion = "success" if night == 0 else "failure"
        jobs = (
            ProbeJob(sha, "probe", "completed", "success", None),
            ProbeJob(sha, "probe-xfail", "completed", conclusion, None),
        )
        runs.append(NightlyRun(sha, now - timedelta(days=night, hours=2), jobs))
    return runs


def alerts(now: datetime) -> list[dict[str, Any]]:
    """The alert log: a backend failing then recovering, the canary turning Degraded."""
    at = lambda hours: (now - timedelta(hours=hours)).isoformat()  # noqa: E731
    return [
        {"kind": "canary", "repo": CANARY, "from": "healthy", "to": "degraded", "at": at(1)},
        {
            "kind": "backend_state",
            "repo": "acme/failing",
            "from": "passing",
            "to": "failing",
            "at": at(3),
        },
        {
            "kind": "backend_state",
            "repo": "acme/stale",
            "from": "passing",
            "to": "stale",
            "at": at(20),
        },
        {
            "kind": "backend_state",
            "repo": "acme/flaky",
            "from": "failing",
            "to": "flaky",
            "at": at(30),
        },
    ]


def degraded_memo() -> HealthMemo:
    """A memo that always answers the degraded report, and knows it from the start: the
    header chip of the first page drawn says Degraded too (a screenshot of it must not
    depend on whether a background refresh finished first)."""

    async def report() -> HealthReport:
        return degraded_report()

    async def recent(limit: int) -> list[dict[str, Any]]:
        return alerts(datetime.now(UTC))[:limit]

    memo = HealthMemo(report, alerts=recent)
    with ThreadPoolExecutor(1) as aside:  # a loop of its own: fixtures may run inside one
        aside.submit(asyncio.run, memo.fresh()).result()
    return memo

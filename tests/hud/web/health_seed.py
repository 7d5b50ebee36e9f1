"""A relay health document for the page tests: Degraded, so every section is drawn."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from crcr.hud.health.canary import (
    CanaryStatus,
    CanaryVerdict,
    JudgedProbe,
    ProbeDispatch,
    ProbeState,
    Unexpected,
)
from crcr.hud.health.memo import HealthMemo
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
    return HealthReport(CANARY, verdict, backends)


def degraded_memo() -> HealthMemo:
    """A memo that always answers the degraded report, and knows it from the start: the
    header chip of the first page drawn says Degraded too (a screenshot of it must not
    depend on whether a background refresh finished first)."""

    async def report() -> HealthReport:
        return degraded_report()

    memo = HealthMemo(report)
    with ThreadPoolExecutor(1) as aside:  # a loop of its own: fixtures may run inside one
        aside.submit(asyncio.run, memo.fresh()).result()
    return memo

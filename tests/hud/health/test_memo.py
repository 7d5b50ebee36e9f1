"""The health memo behind every page's header chip: computed afresh, refreshed when old."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.waiting import eventually

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


def report_of(status: CanaryStatus) -> HealthReport:
    return HealthReport("org/canary", CanaryVerdict(status, (), (), ()), ())


class Source:
    """A health document source whose status a test sets; counts its calls."""

    def __init__(self) -> None:
        self.status = CanaryStatus.HEALTHY
        self.calls = 0
        self.broken = False

    async def __call__(self) -> HealthReport:
        self.calls += 1
        if self.broken:
            raise ConnectionError("state store down")
        return report_of(self.status)


async def test_the_chip_shows_the_last_status_and_refreshes_it_when_old() -> None:
    source, now = Source(), [0.0]
    memo = HealthMemo(source, max_age=30, clock=lambda: now[0])

    assert memo.known_status() is None  # nothing known yet; a refresh starts
    await eventually(lambda: memo.known_status() is CanaryStatus.HEALTHY, what="refresh")
    source.status = CanaryStatus.DEGRADED
    now[0] = 10.0
    assert memo.known_status() is CanaryStatus.HEALTHY  # young enough: no refresh
    assert source.calls == 1
    now[0] = 31.0
    memo.known_status()
    await eventually(lambda: memo.known_status() is CanaryStatus.DEGRADED, what="refresh")


async def test_a_failed_refresh_keeps_the_last_status() -> None:
    source, now = Source(), [0.0]
    memo = HealthMemo(source, max_age=30, clock=lambda: now[0])
    await memo.fresh()
    source.broken, now[0] = True, 100.0
    memo.known_status()
    await eventually(lambda: source.calls == 2, what="the failed refresh")
    assert memo.known_status() is CanaryStatus.HEALTHY


def test_the_report_has_the_spec_shape() -> None:
    moment = datetime(2026, 11, 27, 12, tzinfo=UTC)
    probe = ProbeDispatch("d1", "crcr_probe", moment)
    verdict = CanaryVerdict(
        CanaryStatus.DEGRADED,
        (JudgedProbe(probe, ProbeState.OVERDUE),),
        (Unexpected("d0", "probe-xfail", "success", "failure"),),
        (probe,),
    )
    body = HealthReport(
        "org/canary", verdict, (BackendHealth("org/b", BackendState.STALE, None),)
    ).as_json()
    assert body == {
        "status": "degraded",
        "canary": "org/canary",
        "probes": [
            {
                "delivery_id": "d1",
                "event_type": "crcr_probe",
                "dispatched_at": "2026-11-27T12:00:00Z",
                "state": "overdue",
            }
        ],
        "unexpected": [
            {
                "delivery_id": "d0",
                "job_name": "probe-xfail",
                "conclusion": "success",
                "expected": "failure",
            }
        ],
        "overdue": [{"delivery_id": "d1", "dispatched_at": "2026-11-27T12:00:00Z"}],
        "nightly": None,
        "backends": [{"repo": "org/b", "state": "stale", "last_report_at": None}],
    }

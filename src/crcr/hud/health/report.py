"""The health document (SPEC §13 `GET /api/crcr/health`) and its exact JSON shape.

The relay assembles it (it alone knows what was dispatched); the HUD's page and the API
show it. One type, so the page and the JSON can never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from crcr.hud.health.canary import CanaryStatus, CanaryVerdict
from crcr.hud.health.nightly import NightlyVerdict
from crcr.hud.health.states import BackendState


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class BackendHealth:
    """One backend's state and when it last reported anything."""

    repo: str
    state: BackendState
    last_report_at: datetime | None


@dataclass(frozen=True)
class HealthReport:
    """The canary's verdict (None: no canary configured) and every backend's state.

    `nightly` is the canary's nightly card (its self-reported nightly runs), None without
    a canary; it is shown beside the probes and does not change `status` (SPEC §13).
    """

    canary: str | None
    verdict: CanaryVerdict | None
    backends: tuple[BackendHealth, ...]
    nightly: NightlyVerdict | None = None

    @property
    def status(self) -> CanaryStatus:
        """`healthy`, `degraded` or `no_data` (no canary, or no judged probe yet)."""
        return CanaryStatus.NO_DATA if self.verdict is None else self.verdict.status

    def as_json(self) -> dict[str, Any]:
        """The SPEC §13 shape, key for key."""
        verdict = self.verdict
        return {
            "status": str(self.status),
            "canary": self.canary,
            "probes": [
                {
                    "delivery_id": judged.probe.delivery_id,
                    "event_type": judged.probe.event_type,
                    "dispatched_at": _iso(judged.probe.dispatched_at),
                    "state": str(judged.state),
                }
                for judged in (verdict.probes if verdict else ())
            ],
            "unexpected": [
                {
                    "delivery_id": job.delivery_id,
                    "job_name": job.job_name,
                    "conclusion": job.conclusion,
                    "expected": job.expected,
                }
                for job in (verdict.unexpected if verdict else ())
            ],
            "overdue": [
                {"delivery_id": probe.delivery_id, "dispatched_at": _iso(probe.dispatched_at)}
                for probe in (verdict.overdue if verdict else ())
            ],
            "nightly": None if self.nightly is None else _nightly_json(self.nightly),
            "backends": [
                {
                    "repo": backend.repo,
                    "state": str(backend.state),
                    "last_report_at": _iso(backend.last_report_at),
                }
                for backend in self.backends
            ],
        }


def _nightly_json(nightly: NightlyVerdict) -> dict[str, Any]:
    """The nightly card: `{"status", "runs": [{"delivery_id", "reported_at", "state"}],
    "unexpected": [...]}` (crcr's extension of the SPEC §13 document)."""
    return {
        "status": str(nightly.status),
        "runs": [
            {
                "delivery_id": judged.run.delivery_id,
                "reported_at": _iso(judged.run.reported_at),
                "state": str(judged.state),
            }
            for judged in nightly.runs
        ],
        "unexpected": [
            {
                "delivery_id": job.delivery_id,
                "job_name": job.job_name,
                "conclusion": job.conclusion,
                "expected": job.expected,
            }
            for job in nightly.unexpected
        ],
    }

"""The job state a queued HUD body stands for, so that a stale body is never sent.

A body waits in the `hud` retry queue while the job may move on: a queued in_progress
row delivered after the job's completed row would regress the row, and a queued
timed_out row would overwrite the late truth. Each queued body carries the state it
was written for; the queue's handler skips it once the job holds another.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crcr.relay.jobs.job import Job, stored_conclusion
from crcr.relay.jobs.lifecycle import JobState
from crcr.stores.state import JobRecord


@dataclass(frozen=True)
class HudExpectation:
    """The job, state and conclusion a HUD body was written for."""

    job_key: str
    state: JobState
    conclusion: str | None

    @classmethod
    def of(cls, job: Job) -> HudExpectation:
        """What a body written for `job` as it stands now expects."""
        return cls(job.key, job.state, job.conclusion)

    def to_store(self) -> dict[str, Any]:
        """The `expect` mapping kept with a queued item."""
        return {"job_key": self.job_key, "state": str(self.state), "conclusion": self.conclusion}

    @classmethod
    def from_store(cls, raw: object) -> HudExpectation | None:
        """Rebuild a queued item's `expect`; None when the body stands for no job."""
        if not isinstance(raw, Mapping) or not raw.get("job_key"):
            return None
        conclusion = raw.get("conclusion")
        return cls(
            job_key=str(raw["job_key"]),
            state=JobState(raw["state"]),
            conclusion=None if conclusion is None else str(conclusion),
        )

    def is_stale(self, record: JobRecord | None) -> bool:
        """Whether the job has moved on from what the body says (a vanished job has not)."""
        if record is None:
            return False
        return record.state != self.state or stored_conclusion(record) != self.conclusion

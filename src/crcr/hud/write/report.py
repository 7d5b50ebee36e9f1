"""A callback's report of one job execution, as ingestion builds it and the write path stores it."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property

from crcr.hud.job_facts import JobFacts


@dataclass(frozen=True)
class JobReport(JobFacts):
    """One callback's view of a job execution; None means the body did not carry it.

    The failure detail (SPEC §11) is held as the row stores it: `failed_tests` and
    `triage_verdict` as JSON text, already bounded and sanitised by ingestion.
    """

    failed_tests: str | None = None
    triage_verdict: str | None = None
    confirmed: bool | None = None
    github_conclusion: str | None = None
    expected_conclusion: str | None = None
    """What the job should conclude (SPEC §13 `workflow.expected_conclusion`), if it says."""
    superseded_by: str | None = None
    """The newer head of its PR that superseded the job (SPEC §15 `trusted.superseded_by`)."""

    @cached_property
    def job_key(self) -> str:
        """Digest of the execution's identity: a re-run (new attempt or check run) differs.

        Cached: the write path asks for it several times per report.
        """
        parts = (
            self.downstream_repo.lower(),
            self.delivery_id,
            self.workflow_name,
            self.job_name,
            self.run_id,
            str(self.run_attempt),
            self.check_run_id,
        )
        return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()

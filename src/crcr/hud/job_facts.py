"""The SPEC §6 row fields of one job execution, defined once for the HUD's two views of them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class JobFacts:
    """What a HUD row says of one job execution: identity, state, timing, test counts.

    A callback's report (`JobReport`) and a stored row (`JobRow`) carry the same
    fields; only what `None` means differs (not reported, or stored as null).
    """

    downstream_repo: str
    downstream_repo_level: str | None
    upstream_repo: str
    event_type: str
    pr_number: int
    head_sha: str
    delivery_id: str
    workflow_name: str
    job_name: str
    run_id: str
    run_attempt: int
    check_run_id: str
    status: str
    conclusion: str | None
    started_at: datetime | None
    completed_at: datetime | None
    queue_time: float | None
    execution_time: float | None
    passed: int | None
    failed: int | None
    skipped: int | None
    total_tests: int | None
    workflow_run_url: str | None
    artifact_url: str | None

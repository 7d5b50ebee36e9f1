"""The sandbox's Actions jobs: what GitHub itself knows of each job, whatever it reported.

Simulated downstream CI records its jobs here as they start and finish, so that
`GET /repos/{o}/{r}/actions/jobs/{id}` answers with the job's real status and
conclusion, which the relay compares with what the job reported (SPEC §11).
"""

from __future__ import annotations

import base64
import threading
from dataclasses import dataclass, replace
from typing import Any

from crcr.sandbox.github_model import iso


@dataclass(frozen=True)
class ActionsJob:
    """One job of one attempt of a workflow run, as GitHub's jobs API describes it."""

    id: int
    repo: str
    run_id: int
    run_attempt: int
    name: str
    workflow_name: str
    head_sha: str
    created_at: float
    status: str = "queued"
    conclusion: str | None = None
    started_at: float | None = None
    completed_at: float | None = None

    def as_json(self, api_base: str) -> dict[str, Any]:
        """GitHub's `job` object: every field its OpenAPI schema requires."""
        repo_api = f"{api_base}/repos/{self.repo}"
        node = base64.b64encode(f"08:WorkflowJob{self.id}".encode()).decode()
        return {
            "id": self.id,
            "run_id": self.run_id,
            "run_url": f"{repo_api}/actions/runs/{self.run_id}",
            "run_attempt": self.run_attempt,
            "node_id": node,
            "head_sha": self.head_sha,
            "url": f"{repo_api}/actions/jobs/{self.id}",
            "html_url": f"https://github.com/{self.repo}/actions/runs/{self.run_id}/job/{self.id}",
            "status": self.status,
            "conclusion": self.conclusion,
            "created_at": iso(self.created_at),
            "started_at": iso(self.started_at or self.created_at),
            "completed_at": iso(self.completed_at) if self.completed_at is not None else None,
            "name": self.name,
            "steps": [],
            "check_run_url": f"{repo_api}/check-runs/{self.id}",
            "labels": ["ubuntu-latest"],
            "runner_id": 1,
            "runner_name": "sandbox runner",
            "runner_group_id": 1,
            "runner_group_name": "sandbox",
            "workflow_name": self.workflow_name,
            "head_branch": "main",
        }


class ActionsJobs:
    """Every job the sandbox knows, by id (job ids are unique across repositories)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[int, ActionsJob] = {}

    def record(self, job: ActionsJob) -> None:
        """Add a job, or replace the record of one with the same id."""
        with self._lock:
            self._jobs[job.id] = job

    def update(self, job_id: int, **changes: Any) -> ActionsJob:
        """Move a job on (`status`, `conclusion`, `started_at`, `completed_at`)."""
        with self._lock:
            job = replace(self._jobs[job_id], **changes)
            self._jobs[job_id] = job
            return job

    def get(self, repo: str, job_id: int) -> ActionsJob | None:
        """The job with this id in this repository; None for another repository's job."""
        with self._lock:
            job = self._jobs.get(job_id)
        return job if job is not None and job.repo.lower() == repo.lower() else None

"""The demo's simulated past: days of results, so every chart and criterion has data at once.

Pure: the backends, a random generator and the time go in; SPEC §6 results bodies with
the time each was received come out, for the HUD's own ingest path to store. Each run
is planned by the same planner the simulated CI uses, at the backend's real (not
compressed) durations. A flaky job counts as its passing re-run (the level criteria
take the latest attempt), and history has no hung jobs: a fortnight of healthy
backends, except the one the demo degrades, which was already slipping last week.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from crcr.demo.backends import DemoBackend
from crcr.sandbox.simulated_ci_model import PlannedJob, plan_attempt

RUNS_PER_DAY = 6
SLIPPING_DAYS = 7
SLIPPING_EVERY = 5
"""In its last week the degrading backend failed one job in 5 (80 % passing): just
inside the demo's 75 % pass-rate criterion (`demo.levels.CRITERIA`), so the failures
of the live run tip it over."""
FIRST_HISTORY_PR = 100_001


def history_bodies(
    backends: Sequence[DemoBackend],
    *,
    days: int,
    now: datetime,
    rng: random.Random,
    upstream: str,
    slipping: str | None = None,
    runs_per_day: int = RUNS_PER_DAY,
) -> list[tuple[dict[str, Any], datetime]]:
    """Results of `days` days of pull requests for every backend at L2 or above, oldest first."""
    bodies: list[tuple[dict[str, Any], datetime]] = []
    runs = days * runs_per_day
    spacing = timedelta(days=days) / max(runs, 1)
    start = now - timedelta(days=days)
    for index in range(runs):
        dispatched = start + spacing * index + timedelta(seconds=rng.uniform(0, 600))
        pr_number, head_sha = FIRST_HISTORY_PR + index, f"{rng.getrandbits(160):040x}"
        delivery = str(uuid.UUID(int=rng.getrandbits(128)))
        for backend in backends:
            if backend.level == "L1":
                continue
            failing_week = backend.repo == slipping and now - dispatched < timedelta(
                days=SLIPPING_DAYS
            )
            for number, job in enumerate(plan_attempt(backend.workflow, rng, attempt=2)):
                failed = (
                    (index + number) % SLIPPING_EVERY == 0
                    if failing_week
                    else job.outcome == "failure"
                )
                received = dispatched + timedelta(seconds=job.queue_delay + job.duration)
                if received >= now:
                    continue
                body = _body(
                    backend,
                    job,
                    upstream=upstream,
                    delivery=delivery,
                    pr_number=pr_number,
                    head_sha=head_sha,
                    run_id=str(10_000_000 + index),
                    check_run_id=f"{10_000_000 + index}{number:03d}",
                    dispatched=dispatched,
                    failed=failed,
                )
                bodies.append((body, received))
    bodies.sort(key=lambda pair: pair[1])
    return bodies


def _counts(planned: dict[str, int], failed: bool) -> dict[str, int]:
    """Test counts that agree with the job's conclusion."""
    counts = dict(planned)
    if failed and counts["failed"] == 0 and counts["passed"] > 0:
        counts["passed"], counts["failed"] = counts["passed"] - 1, 1
    elif not failed:
        counts["passed"], counts["failed"] = counts["passed"] + counts["failed"], 0
    return counts


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _body(
    backend: DemoBackend,
    job: PlannedJob,
    *,
    upstream: str,
    delivery: str,
    pr_number: int,
    head_sha: str,
    run_id: str,
    check_run_id: str,
    dispatched: datetime,
    failed: bool,
) -> dict[str, Any]:
    """One completed job, as the relay forwards it (SPEC §6)."""
    started = dispatched + timedelta(seconds=job.queue_delay)
    completed = started + timedelta(seconds=job.duration)
    workflow: dict[str, Any] = {
        "schema_version": "1",
        "status": "completed",
        "conclusion": "failure" if failed else "success",
        "name": backend.workflow.name,
        "url": f"https://github.com/{backend.repo}/actions/runs/{run_id}",
        "run_id": run_id,
        "run_attempt": "1",
        "job_name": job.name,
        "check_run_id": check_run_id,
        "started_at": _iso(started),
        "completed_at": _iso(completed),
    }
    if job.test_results is not None:
        workflow["test_results"] = _counts(job.test_results, failed)
    return {
        "trusted": {
            "verified_repo": backend.repo,
            "downstream_repo_level": backend.level,
            "ci_metrics": {
                "queue_time": round(job.queue_delay, 3),
                "execution_time": round(job.duration, 3),
            },
            "dispatch": {
                "upstream_repo": upstream,
                "event_type": "pull_request",
                "head_sha": head_sha,
                "pr_number": pr_number,
            },
        },
        "untrusted": {
            "callback_payload": {
                "event_type": "pull_request",
                "delivery_id": delivery,
                "workflow": workflow,
            }
        },
    }

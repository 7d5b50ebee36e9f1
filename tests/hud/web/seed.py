"""Known results, posted to the HUD's real ingestion API, for the page tests.

The figures the browser tests assert are worked out here, next to the data:

- acme/gate (L4): PR 101 and PR 102, both with build, lint and three test shards.
  PR 101's second shard failed; everything else passed. 10 jobs, 9 passed → 90 % (amber).
- acme/flaky (L3): PR 101: build failed then passed on re-run (2 rows), test passed,
  lint timed out, docs failed. 5 jobs, 2 passed → 40 % (red), 1 timed out.
- acme/steady (L2): PR 103 tested on three different days, one job each, all green
  (3 of 3 → 100 %, green); nightly runs: a failure two days ago, then a success today.
- acme/dormant (L2): one green job 20 days ago: no data in a 7-day window, data in 30.

Levels (the 7-day demotion window for L3/L4, 14-day promotion window for L2): acme/gate
is healthy (9 of 10 = 90 %, the target exactly); acme/flaky is to be demoted (latest
attempts: 2 of 4 green, 1 of 4 timed out) and is temporarily demoted since yesterday
(`DemotionsForTests`); acme/steady is not ready (4 days at L2); acme/dormant has no
data in 14 days.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from crcr.hud.levels.providers import Demotion

UPSTREAM = "pytorch/pytorch"
SHA_101 = "1010101010101010101010101010101010101010"
SHA_102 = "1020202020202020202020202020202020202020"
SHA_103 = "1030303030303030303030303030303030303030"
NIGHTLY_OLD = "aaaa000000000000000000000000000000000000"
NIGHTLY_NEW = "bbbb111111111111111111111111111111111111"


@dataclass(frozen=True)
class Result:
    """One completed job as a downstream would report it."""

    repo: str
    level: str
    pr: int
    sha: str
    job: str
    conclusion: str
    workflow: str = "ci"
    attempt: int = 1
    days_ago: int = 0
    event: str = "pull_request"
    queue: float = 30.0
    execution: float = 600.0
    run_id: str = "5000"


RESULTS = (
    # acme/gate, L4
    *(
        Result("acme/gate", "L4", pr, sha, job, conclusion, run_id=run)
        for pr, sha, run in ((101, SHA_101, "101"), (102, SHA_102, "102"))
        for job, conclusion in (
            ("build", "success"),
            ("lint", "success"),
            ("test (default, 1, 3, linux)", "success"),
            ("test (default, 2, 3, linux)", "failure" if pr == 101 else "success"),
            ("test (default, 3, 3, linux)", "success"),
        )
    ),
    # acme/flaky, L3
    Result("acme/flaky", "L3", 101, SHA_101, "build", "failure", attempt=1, queue=90.0),
    Result("acme/flaky", "L3", 101, SHA_101, "build", "success", attempt=2, queue=90.0),
    Result("acme/flaky", "L3", 101, SHA_101, "test", "success", queue=90.0),
    Result("acme/flaky", "L3", 101, SHA_101, "lint", "timed_out", queue=90.0),
    Result("acme/flaky", "L3", 101, SHA_101, "docs", "failure", queue=90.0),
    # acme/steady, L2
    *(
        Result("acme/steady", "L2", 103, SHA_103, "build", "success", days_ago=d, run_id=f"3{d}")
        for d in (0, 2, 4)
    ),
    Result("acme/steady", "L2", 0, NIGHTLY_OLD, "nightly", "failure", days_ago=2, event="nightly"),
    Result("acme/steady", "L2", 0, NIGHTLY_NEW, "nightly", "success", event="nightly"),
    # acme/dormant, L2: outside a 7-day window
    Result("acme/dormant", "L2", 104, SHA_103, "build", "success", days_ago=20),
)


def result_body(result: Result, now: datetime) -> dict[str, Any]:
    """The SPEC §6 body the relay would forward for this result."""
    finished = now - timedelta(days=result.days_ago)
    started = finished - timedelta(seconds=result.execution)
    run_url = f"https://github.com/{result.repo}/actions/runs/{result.run_id}"
    nightly = result.event == "nightly"
    return {
        "trusted": {
            "verified_repo": result.repo,
            "downstream_repo_level": result.level,
            "ci_metrics": {"queue_time": result.queue, "execution_time": result.execution},
            "dispatch": {
                "upstream_repo": UPSTREAM,
                "event_type": result.event,
                "head_sha": result.sha,
                "pr_number": result.pr,
            },
        },
        "untrusted": {
            "callback_payload": {
                "event_type": result.event,
                "delivery_id": result.sha if nightly else f"delivery-{result.pr}-{result.sha}",
                "payload": {},
                "workflow": {
                    "schema_version": "1",
                    "status": "completed",
                    "conclusion": result.conclusion,
                    "name": result.workflow,
                    "url": f"{run_url}/attempts/{result.attempt}",
                    "run_id": result.run_id,
                    "run_attempt": str(result.attempt),
                    "job_name": result.job,
                    "check_run_id": f"{result.run_id}-{result.job}-{result.attempt}",
                    "started_at": started.isoformat(),
                    "completed_at": finished.isoformat(),
                    "test_results": {"passed": 40, "failed": 0, "skipped": 2},
                    "artifact_url": f"{run_url}/artifacts",
                },
            }
        },
    }


DEMOTION_PR = "https://github.com/pytorch/pytorch/pull/900"


class DemotionsForTests:
    """acme/flaky under temporary demotion since a day before the HUD started."""

    def __init__(self) -> None:
        self.since = datetime.now(UTC).replace(microsecond=0) - timedelta(days=1)

    async def demotions(self) -> dict[str, Demotion]:
        return {"acme/flaky": Demotion(self.since, DEMOTION_PR)}


class Clock:
    """The HUD's clock during seeding: rows land on the day the test says."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


def seed(client: httpx.Client, token: str, clock: Clock) -> None:
    """POST every known result to `/api/crcr/results`, each at its own time."""
    now = datetime.now(UTC)
    for index, result in enumerate(RESULTS):
        # A second apart, in list order: later results are newer.
        clock.now = now - timedelta(days=result.days_ago, seconds=len(RESULTS) - index)
        response = client.post(
            "/api/crcr/results",
            json=result_body(result, now),
            headers={"x-hud-internal-bot": token},
        )
        assert response.status_code == 200, response.text
    clock.now = now

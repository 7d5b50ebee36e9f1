"""L4 flake confirmation through the whole loop (SPEC §11): the relay asks GitHub for the
re-run, the simulated downstream CI runs the failed job again and reports through
`crcr report`, and the upstream check run ends "flaky" or "failed twice".
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.sandbox_loop import Loop, running_loop
from tests.waiting import eventually

from crcr.sandbox.simulated_ci_model import Duration, JobSpec, OutcomeRates, WorkflowSpec
from crcr.sandbox.webhooks import pull_request_event

UPSTREAM = "loop-org/pytorch"
L4_REPO = "loop-org/critical"
QUICK = Duration.fixed(0.0)
WORKFLOWS = {
    L4_REPO: WorkflowSpec(
        "ci",
        jobs=(
            JobSpec("flaky", QUICK, tests=10, outcomes=OutcomeRates(flaky=1.0)),
            JobSpec("broken", QUICK, tests=10, broken_tests=("test_x.TestX.test_broken",)),
            JobSpec("green", QUICK),
        ),
    )
}
ALLOWLIST = f"L4:\n  - {L4_REPO}: oncall-one\n"


@pytest.fixture
async def loop(tmp_path: Path) -> AsyncIterator[Loop]:
    async with running_loop(
        tmp_path,
        upstream=UPSTREAM,
        allowlist=ALLOWLIST,
        workflows=WORKFLOWS,
        # Failing on purpose must not get the backend temporarily demoted (SPEC §10.1).
        level_criteria='{"job_pass_rate": 0}',
    ) as running:
        yield running


def latest(loop: Loop, job: str) -> dict[str, Any] | None:
    runs = [r for r in loop.github.check_runs(UPSTREAM) if r["name"] == f"crcr/{L4_REPO}/ci/{job}"]
    return runs[-1] if runs else None


def finished(loop: Loop, job: str) -> bool:
    run = latest(loop, job)
    return run is not None and run["status"] == "completed"


async def test_a_flaky_job_passes_on_its_re_run_and_a_broken_one_fails_twice(loop: Loop) -> None:
    payload = pull_request_event("opened", repo=UPSTREAM, number=7, head_sha="7" * 40)
    assert (await loop.webhook("pull_request", payload)).status_code == 200

    async def settled() -> bool:
        return all(finished(loop, job) for job in ("flaky", "broken", "green"))

    await eventually(settled, within=60)

    (rerun,) = loop.github.reruns(L4_REPO)
    assert rerun.kind == "rerun-failed-jobs"
    flaky, broken, green = (latest(loop, job) for job in ("flaky", "broken", "green"))
    assert flaky is not None and broken is not None and green is not None
    assert (flaky["conclusion"], flaky["output"]["title"]) == ("success", "Success (flaky)")
    assert "passed on re-run (flaky)" in flaky["output"]["summary"]
    assert broken["conclusion"] == "failure"
    assert "failed twice" in broken["output"]["summary"]
    assert "Failed tests: `test_x.TestX.test_broken`." in broken["output"]["summary"]
    assert green["conclusion"] == "success" and green["output"]["title"] == "Success"
    titles = [r["output"]["title"] for r in loop.github.check_runs(UPSTREAM)]
    assert titles.count("Re-running to confirm") == 2

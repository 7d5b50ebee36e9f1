"""Baseline verdicts from the whole loop: sandbox GitHub → relay → simulated CI → HUD.

Scenario (SPEC §11), on real SQLite and real PostgreSQL results stores:
1. A push to upstream main is dispatched; acme/xpu-backend's job X fails, Y and Z pass;
   acme/npu-backend runs only `build`.
2. A PR is opened; X and Y fail, Z fails once; npu-backend's new `test` job fails.
   → X `already_failing`, Y `new`, Z `new`, npu's `test` `unknown` (no push result).
3. The downstream re-runs its failed jobs; Z passes on its second attempt → Z `flaky`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine
from tests.sandbox_loop import Loop, running_loop
from tests.waiting import eventually

from crcr.sandbox.simulated_ci_model import Duration, JobSpec, OutcomeRates, WorkflowSpec
from crcr.sandbox.webhooks import pull_request_event, push_event

UPSTREAM = "baseline-org/pytorch"
XPU, NPU = "acme/xpu-backend", "acme/npu-backend"
PR_NUMBER, HEAD_SHA, MAIN_SHA = 777, "7e57" * 10, "3a1e" * 10
QUICK = Duration.fixed(0.0)
FAILS, FLAKY = OutcomeRates(failure=1.0), OutcomeRates(flaky=1.0)

ON_MAIN = {
    XPU: WorkflowSpec(
        "xpu-ci",
        jobs=(JobSpec("X", QUICK, outcomes=FAILS), JobSpec("Y", QUICK), JobSpec("Z", QUICK)),
    ),
    NPU: WorkflowSpec("npu-ci", jobs=(JobSpec("build", QUICK),)),
}
ON_THE_PR = {
    XPU: WorkflowSpec(
        "xpu-ci",
        jobs=(
            JobSpec("X", QUICK, outcomes=FAILS),
            JobSpec("Y", QUICK, outcomes=FAILS),
            JobSpec("Z", QUICK, outcomes=FLAKY),
        ),
    ),
    NPU: WorkflowSpec("npu-ci", jobs=(JobSpec("test", QUICK, outcomes=FAILS),)),
}


async def pr_jobs(loop: Loop) -> list[dict[str, Any]]:
    """Every job row of the PR, as the HUD's JSON API shows them."""
    view = await loop.hud(f"/pr/{PR_NUMBER}")
    return [job for backend in view["backends"] for job in backend["jobs"]]


async def push_jobs(loop: Loop) -> list[dict[str, Any]]:
    """The latest push result of every job, as the backend pages' JSON shows them."""
    cells = []
    for repo in ON_MAIN:
        page = await loop.http.get(f"{loop.relay_url}/api/crcr/backends/{repo}?event_type=push")
        if page.status_code == 404:  # no result from this backend yet
            continue
        page.raise_for_status()
        cells += [cell for row in page.json()["rows"] for cell in row["cells"].values()]
    return cells


async def rerun_failed_jobs(loop: Loop, repo: str) -> None:
    """What a downstream maintainer does: re-run the failed jobs of the PR's run."""
    [run] = [run for run in loop.ci.runs(repo) if run.pr_number == PR_NUMBER]
    token, _ = loop.github.issue_token(loop.github.installation_of_repo(repo).id)
    response = await loop.http.post(
        f"{loop.sandbox_url}/repos/{repo}/actions/runs/{run.run_id}/rerun-failed-jobs",
        headers={"Authorization": f"token {token}"},
    )
    assert response.status_code == 201, response.text


@pytest.fixture
async def loop(tmp_path: Path, engine: Engine, store_url: str) -> AsyncIterator[Loop]:
    """The loop with its HUD on the store under test (emptied by `engine` first)."""
    async with running_loop(
        tmp_path,
        upstream=UPSTREAM,
        allowlist=f"L2:\n  - {XPU}\n  - {NPU}\n",
        workflows=ON_MAIN,
        database_url=store_url,
        seed=11,
    ) as running:
        yield running


def verdicts(jobs: list[dict[str, Any]]) -> dict[tuple[str, str, int], str | None]:
    return {(j["downstream_repo"], j["job_name"], j["run_attempt"]): j["baseline"] for j in jobs}


async def test_each_failed_pr_job_is_judged_against_main_through_the_whole_loop(
    loop: Loop,
) -> None:
    sent = await loop.webhook("push", push_event(repo=UPSTREAM, after=MAIN_SHA))
    assert sent.status_code == 200, sent.text

    async def main_reported() -> bool:
        cells = await push_jobs(loop)
        return len(cells) == 4 and all(cell["status"] == "completed" for cell in cells)

    await eventually(main_reported)

    loop.ci.workflows.update({repo.lower(): spec for repo, spec in ON_THE_PR.items()})
    pr = pull_request_event("opened", repo=UPSTREAM, number=PR_NUMBER, head_sha=HEAD_SHA)
    assert (await loop.webhook("pull_request", pr)).status_code == 200

    async def pr_reported(rows: int) -> bool:
        jobs = await pr_jobs(loop)
        return len(jobs) == rows and all(job["status"] == "completed" for job in jobs)

    await eventually(lambda: pr_reported(4))
    assert verdicts(await pr_jobs(loop)) == {
        (XPU, "X", 1): "already_failing",
        (XPU, "Y", 1): "new",
        (XPU, "Z", 1): "new",
        (NPU, "test", 1): "unknown",
    }

    await rerun_failed_jobs(loop, XPU)
    await eventually(lambda: pr_reported(7))

    assert verdicts(await pr_jobs(loop)) == {
        (XPU, "X", 1): "already_failing",
        (XPU, "X", 2): "already_failing",
        (XPU, "Y", 1): "new",
        (XPU, "Y", 2): "new",
        (XPU, "Z", 1): "flaky",
        (XPU, "Z", 2): None,  # it passed: only failures get a verdict
        (NPU, "test", 1): "unknown",
    }

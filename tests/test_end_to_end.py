"""The whole loop over real HTTP on loopback, and `crcr demo` itself.

A signed webhook reaches the relay → the relay dispatches to the sandbox GitHub → the
simulated downstream CI runs and reports through `crcr report` with sandbox OIDC
tokens → the relay verifies, records and forwards → the HUD has rows → the pages in
Chromium show them.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.browser import CHROMIUM, CHROMIUM_ARGS, require_chromium
from tests.sandbox_loop import Loop, running_loop
from tests.waiting import eventually

from crcr.sandbox.simulated_ci_model import Duration, JobSpec, OutcomeRates, WorkflowSpec
from crcr.sandbox.webhooks import pull_request_event

UPSTREAM = "e2e-org/pytorch"
L1_REPO = "e2e-org/smoke-only"
L2_REPO = "e2e-org/npu-backend"
L4_REPO = "e2e-org/critical-backend"
PR_NUMBER = 4242
HEAD_SHA = "4242" * 10

ALLOWLIST = f"""
L1:
  - {L1_REPO}
L2:
  - {L2_REPO}
L4:
  - {L4_REPO}: oncall-one
"""

QUICK = Duration.fixed(0.0)
WORKFLOWS = {
    L1_REPO: WorkflowSpec("smoke", jobs=(JobSpec("smoke", QUICK),)),
    L2_REPO: WorkflowSpec(
        "npu-ci",
        jobs=(
            JobSpec("build", QUICK),
            JobSpec("lint", QUICK, outcomes=OutcomeRates(failure=1.0)),
            JobSpec("test", QUICK, matrix=("1, 2", "2, 2"), tests=120),
        ),
    ),
    L4_REPO: WorkflowSpec("critical-ci", jobs=(JobSpec("test", QUICK, tests=50),)),
}

DEMO_COMMAND = [sys.executable, "-m", "crcr", "demo"]
DEMO_OPTIONS = [
    *("--duration", "12", "--speed", "50", "--rate", "120", "--no-open", "--port", "0"),
    *("--history", "1"),
]
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts" / "end-to-end"


@pytest.fixture
async def loop(tmp_path: Path) -> AsyncIterator[Loop]:
    """Sandbox (GitHub + OIDC issuer), relay + HUD on SQLite, and simulated CI, all on loopback."""
    async with running_loop(
        tmp_path, upstream=UPSTREAM, allowlist=ALLOWLIST, workflows=WORKFLOWS
    ) as running:
        yield running


async def open_pr_and_wait_for_results(loop: Loop) -> dict[str, Any]:
    """Open the PR upstream and wait until the HUD has every L2+ job completed."""
    payload = pull_request_event("opened", repo=UPSTREAM, number=PR_NUMBER, head_sha=HEAD_SHA)
    response = await loop.webhook("pull_request", payload)
    assert response.status_code == 200, response.text
    assert sorted(response.json()["dispatched"]) == sorted(WORKFLOWS)

    async def every_job_completed() -> bool:
        view = await loop.hud(f"/pr/{PR_NUMBER}")
        jobs = [job for backend in view["backends"] for job in backend["jobs"]]
        return len(jobs) == 5 and all(job["status"] == "completed" for job in jobs)

    await eventually(every_job_completed)
    view: dict[str, Any] = await loop.hud(f"/pr/{PR_NUMBER}")
    return view


async def test_a_pr_opened_upstream_ends_as_hud_rows_for_l2_and_above(loop: Loop) -> None:
    view = await open_pr_and_wait_for_results(loop)

    by_repo = {backend["repo"]: backend for backend in view["backends"]}
    assert set(by_repo) == {L2_REPO, L4_REPO}, "L1 results never reach the HUD"
    l2_jobs = {job["job_name"]: job for job in by_repo[L2_REPO]["jobs"]}
    assert {name: job["conclusion"] for name, job in l2_jobs.items()} == {
        "build": "success",
        "lint": "failure",
        "test (1, 2)": "success",
        "test (2, 2)": "success",
    }
    for job in l2_jobs.values():
        assert job["head_sha"] == HEAD_SHA and job["pr_number"] == PR_NUMBER
        assert job["upstream_repo"] == UPSTREAM
        assert job["queue_time"] is not None and job["queue_time"] >= 0
        assert job["execution_time"] is not None and job["execution_time"] >= 0
        assert job["started_at"] is not None and job["completed_at"] is not None
    assert l2_jobs["test (1, 2)"]["total_tests"] == 120
    [l4_job] = by_repo[L4_REPO]["jobs"]
    assert (l4_job["downstream_repo_level"], l4_job["conclusion"]) == ("L4", "success")

    # Check runs (SPEC §7) go to L3/L4 backends only.
    assert not [r for r in loop.github.check_runs(UPSTREAM) if L2_REPO in r["name"]]

    verdicts = {(r.repo, r.verdict) for r in loop.ci.reporter.records}
    assert verdicts == {(L1_REPO, "ignored"), (L2_REPO, "accepted"), (L4_REPO, "accepted")}
    assert loop.ci.snapshot().report_errors == 0


@pytest.mark.browser
async def test_the_dashboard_pages_show_the_relayed_results(loop: Loop) -> None:
    require_chromium()
    from playwright.async_api import async_playwright, expect

    await open_pr_and_wait_for_results(loop)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
        )
        try:
            page = await browser.new_page()
            await page.goto(f"{loop.relay_url}/crcr")
            body = page.locator("body")
            await expect(body).to_contain_text(L2_REPO)
            await expect(body).to_contain_text(L4_REPO)
            await page.screenshot(path=str(ARTIFACTS / "summary.png"), full_page=True)

            await page.goto(f"{loop.relay_url}/crcr/pr/{PR_NUMBER}")
            await expect(body).to_contain_text(f"{PR_NUMBER}")
            await expect(body).to_contain_text(L2_REPO)
            await expect(body).to_contain_text("lint")
            await page.screenshot(path=str(ARTIFACTS / "pr.png"), full_page=True)

            await page.goto(f"{loop.relay_url}/crcr/{L2_REPO}")
            await expect(body).to_contain_text(HEAD_SHA[:7])
        finally:
            await browser.close()


# --- the demo -------------------------------------------------------------------------


def test_the_demo_fills_the_dashboard_and_stops_without_errors(tmp_path: Path) -> None:
    """`crcr demo`, accelerated: results appear on the dashboard and nothing errors.

    The time from starting the command to the first completed result in the HUD's
    API is written to test-artifacts/end-to-end/demo-first-result.json.
    """
    data_dir = tmp_path / "demo-data"
    started = time.monotonic()
    demo = subprocess.Popen(
        [*DEMO_COMMAND, *DEMO_OPTIONS, "--data-dir", str(data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert demo.stdout is not None
        first_line = demo.stdout.readline()
        assert first_line.startswith("crcr demo: dashboard at "), first_line
        dashboard = first_line.split(" at ", 1)[1].strip()
        summary_url = dashboard.removesuffix("/crcr") + "/api/crcr/summary?days=1"
        first_result: float | None = None
        with httpx.Client(timeout=10) as client:
            while first_result is None and demo.poll() is None:
                if client.get(summary_url).json()["stats"]["runs"] > 0:
                    first_result = time.monotonic() - started
                else:
                    time.sleep(0.1)
        output, _ = demo.communicate(timeout=60)
    finally:
        if demo.poll() is None:
            demo.kill()
    assert demo.returncode == 0, output
    assert first_result is not None, output
    assert "Traceback" not in output
    assert "Errors: 0." in output, output
    summary_line = next(line for line in output.splitlines() if "results on the dashboard" in line)
    rows = int(summary_line.split(" jobs finished, ")[1].split(" results")[0])
    assert rows > 0
    log = (data_dir / "demo.log").read_text()
    assert " ERROR " not in log, log[-2000:]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "demo-first-result.json").write_text(
        json.dumps({"seconds_from_command_to_first_result": round(first_result, 2)})
    )

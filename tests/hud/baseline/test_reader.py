"""Baseline verdicts over a real results store (SQLite and PostgreSQL), fed real §6 bodies.

Each scenario reports jobs the way the relay forwards them — an `in_progress` body, then
a `completed` one — with the HUD's clock moving forward, then asks the HUD for the
verdicts of a PR's failed jobs.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine
from tests.hud.hud_bodies import completed, our_body

from crcr.hud.queries import HudQueries
from crcr.hud.write.ingest import HudIngestor

REPO, OTHER_REPO = "acme/xpu-backend", "acme/rocm-backend"
PR, HEAD = 4242, "b" * 40


class Timeline:
    """Report jobs to a real ingestor with a clock that moves one minute per body."""

    def __init__(self, engine: Engine) -> None:
        self.now = datetime(2026, 11, 20, 8, 0, tzinfo=UTC)
        self.ingestor = HudIngestor(engine, clock=lambda: self.now)
        self.queries = HudQueries(engine)
        self._runs = 0

    async def job(
        self,
        job: str,
        conclusion: str,
        *,
        push: bool = False,
        repo: str = REPO,
        failed_tests: list[str] | None = None,
        run_id: str | None = None,
        attempt: int = 1,
        head_sha: str = HEAD,
    ) -> None:
        self._runs += 1
        run = run_id or str(1000 + self._runs)
        extra: dict[str, Any] = {}
        if failed_tests is not None:
            extra["test_results"] = {
                "passed": 10,
                "failed": len(failed_tests),
                "failed_tests": [{"name": name} for name in failed_tests],
            }
        started = our_body(
            repo=repo,
            event_type="push" if push else "pull_request",
            pr_number=0 if push else PR,
            head_sha=("m" * 39 + str(self._runs % 10)) if push else head_sha,
            delivery_id=f"delivery-{self._runs}",
            job=job,
            run_id=run,
            run_attempt=str(attempt),
            check_run_id=f"{run}-{job}-{attempt}",
        )
        done = completed(started, conclusion)
        done["untrusted"]["callback_payload"]["workflow"].update(extra)
        for body in (started, done):
            self.now += timedelta(minutes=1)
            await self.ingestor.ingest(body)

    async def verdicts(self) -> dict[str, str]:
        found = await self.queries.baseline_verdicts(PR, HEAD)
        return {job: verdict for (_, _, job), verdict in found.items()}


@pytest.fixture
def timeline(engine: Engine) -> Timeline:
    return Timeline(engine)


async def test_a_job_failing_on_main_is_already_failing_and_a_new_failure_is_new(
    timeline: Timeline,
) -> None:
    await timeline.job("build", "success", push=True)
    await timeline.job("test-x", "failure", push=True)
    await timeline.job("test-y", "success", push=True)

    await timeline.job("build", "success")
    await timeline.job("test-x", "failure")
    await timeline.job("test-y", "failure")

    assert await timeline.verdicts() == {"test-x": "already_failing", "test-y": "new"}


async def test_a_pr_failing_tests_main_did_not_fail_is_new_even_if_the_job_failed_on_main(
    timeline: Timeline,
) -> None:
    await timeline.job("test-a", "failure", push=True, failed_tests=["test_conv"])
    await timeline.job("test-b", "failure", push=True, failed_tests=["test_conv", "test_mm"])

    await timeline.job("test-a", "failure", failed_tests=["test_conv", "test_sdpa"])
    await timeline.job("test-b", "failure", failed_tests=["test_mm"])

    assert await timeline.verdicts() == {"test-a": "new", "test-b": "already_failing"}


async def test_a_failure_that_passes_on_re_run_is_flaky(timeline: Timeline) -> None:
    await timeline.job("test-z", "success", push=True)

    await timeline.job("test-z", "failure", run_id="555", attempt=1)
    assert await timeline.verdicts() == {"test-z": "new"}

    await timeline.job("test-z", "success", run_id="555", attempt=2)
    assert await timeline.verdicts() == {"test-z": "flaky"}


async def test_without_any_push_result_the_verdict_is_unknown(timeline: Timeline) -> None:
    await timeline.job("test-x", "failure", push=True, repo=OTHER_REPO)

    await timeline.job("test-x", "failure")

    assert await timeline.verdicts() == {"test-x": "unknown"}


async def test_the_baseline_is_the_latest_push_result_before_the_pr_job(
    timeline: Timeline,
) -> None:
    await timeline.job("test-x", "failure", push=True)
    await timeline.job("test-x", "cancelled", push=True)  # says nothing either way
    await timeline.job("test-x", "failure")
    await timeline.job("test-x", "success", push=True)  # main fixed after the PR job ran

    assert await timeline.verdicts() == {"test-x": "already_failing"}


async def test_the_pr_view_and_its_json_carry_each_failed_jobs_baseline(
    timeline: Timeline,
) -> None:
    await timeline.job("test-x", "failure", push=True)
    await timeline.job("test-x", "failure", failed_tests=["test_a"])
    await timeline.job("build", "success")

    view = await timeline.queries.pr(PR)

    [backend] = view.backends
    by_job = {job.job_name: job for job in backend.jobs}
    assert by_job["test-x"].baseline == "already_failing"
    assert by_job["build"].baseline is None
    assert [test.name for test in by_job["test-x"].failed_tests or ()] == ["test_a"]


async def test_the_backend_matrix_cells_carry_the_baseline_and_failed_test_names(
    timeline: Timeline,
) -> None:
    await timeline.job("test-x", "success", push=True)
    await timeline.job("test-x", "failure", failed_tests=["test_new_regression"])

    page = await timeline.queries.backend(REPO, 30, now=timeline.now)

    assert page is not None
    pr_row = next(row for row in page.rows if row.pr_number == PR)
    cell = pr_row.cells["CI / test-x"]
    assert cell.baseline == "new"
    assert cell.failed_tests == ("test_new_regression",)

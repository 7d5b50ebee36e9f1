"""Relay health's reads of the results store, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import Engine
from tests.hud.levels.level_jobs import NOW, REPO, START, pr_job, write

from crcr.hud.health.rows import last_reports, recent_completed_jobs
from crcr.hud.health.states import BackendState, Silence, backend_state


def test_a_backend_failing_on_push_while_passing_on_prs_and_probes(engine: Engine) -> None:
    reports = []
    for n in range(3):
        done = START + timedelta(minutes=10 * n)
        reports.append(pr_job(f"push-{n}", conclusion="failure", event_type="push", completed=done))
        reports.append(pr_job(f"pr-{n}", conclusion="success", completed=done))
        reports.append(
            pr_job(f"probe-{n}", conclusion="success", event_type="crcr_probe", completed=done)
        )
    reports.append(pr_job("running", conclusion=None, event_type="push"))
    write(engine, reports)

    jobs = recent_completed_jobs(engine, REPO, alert_after=3)

    assert sorted(job.event_type for job in jobs) == ["push"] * 3
    assert {job.conclusion for job in jobs} == {"failure"}
    silence = Silence(last_reports(engine)[REPO], None)
    state = backend_state(jobs, silence, now=NOW, alert_after=3, stale_seconds=3600)
    assert state is BackendState.FAILING


def test_a_rerun_that_passed_reads_as_the_same_job(engine: Engine) -> None:
    write(
        engine,
        [
            pr_job(7, conclusion="failure", event_type="push", attempt=1),
            pr_job(
                7,
                conclusion="success",
                event_type="push",
                attempt=2,
                completed=START + timedelta(minutes=30),
            ),
        ],
    )
    jobs = recent_completed_jobs(engine, REPO, alert_after=3)
    assert len({job.job for job in jobs}) == 1
    silence = Silence(None, None)
    assert backend_state(jobs, silence, now=NOW, alert_after=3, stale_seconds=60) is (
        BackendState.FLAKY
    )


def test_last_reports_name_every_backend(engine: Engine) -> None:
    write(engine, [pr_job(1, repo="acme/a"), pr_job(2, repo="acme/b", conclusion=None)])
    assert set(last_reports(engine)) == {"acme/a", "acme/b"}

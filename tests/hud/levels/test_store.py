"""Level status over real SQLite and PostgreSQL: every criterion at its boundary, end to end.

Reports go through the real write path; the status is read back as SPEC §10.1's JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, select
from tests.hud.levels.level_jobs import (
    NOW,
    REPO,
    START,
    assert_level_rollups_match_rows,
    pr_job,
    write,
)

from crcr.config.level_criteria import LevelCriteria
from crcr.hud.levels.providers import Demotion
from crcr.hud.levels.status import LevelStatusService
from crcr.hud.models import LEVEL_DAILY

HOUR = timedelta(hours=1)
MINUTE = timedelta(minutes=1)


async def status_of(
    engine: Engine, repo: str = REPO, levels: Mapping[str, str] | None = None
) -> dict[str, Any]:
    service = LevelStatusService(engine, LevelCriteria())
    if levels is not None:
        frozen = dict(levels)

        async def lookup() -> Mapping[str, str]:
            return frozen

        service.level_lookup = lookup
    found = await service.status(NOW)
    [entry] = [r for r in found["repos"] if r["repo"].lower() == repo.lower()]
    return entry


def criterion(entry: Mapping[str, Any], name: str) -> dict[str, Any]:
    [found] = [c for c in entry["criteria"] if c["criterion"] == name]
    return dict(found)


def daily(engine: Engine) -> dict[str, int]:
    with engine.connect() as connection:
        [row] = connection.execute(select(LEVEL_DAILY)).mappings().all()
    return {k: v for k, v in row.items() if k not in ("downstream_repo", "day")}


def runs_of(jobs: int, successes: int) -> list[Any]:
    """`jobs` PR jobs, ten to a run, the first `successes` of them green."""
    return [
        pr_job(i // 10, f"job-{i % 10}", conclusion="success" if i < successes else "failure")
        for i in range(jobs)
    ]


async def test_899_of_1000_green_jobs_demote_an_l3_backend(engine: Engine) -> None:
    write(engine, runs_of(1000, 899))

    entry = await status_of(engine)

    assert entry["change"] == "demote"
    assert criterion(entry, "job_pass_rate") == {
        "criterion": "job_pass_rate",
        "measured": 89.9,
        "target": "≥ 90%",
        "met": False,
    }
    assert_level_rollups_match_rows(engine)


async def test_900_of_1000_green_jobs_keep_it(engine: Engine) -> None:
    write(engine, runs_of(1000, 900))

    entry = await status_of(engine)

    assert (entry["change"], entry["noData"], entry["windowDays"]) == (None, False, 7)
    assert criterion(entry, "job_pass_rate")["met"] is True


async def test_exactly_one_percent_timeouts_is_not_met(engine: Engine) -> None:
    write(engine, [*runs_of(99, 99), pr_job(99, conclusion="timed_out")])

    entry = await status_of(engine)

    assert criterion(entry, "timeout_rate") == {
        "criterion": "timeout_rate",
        "measured": 1.0,
        "target": "< 1%",
        "met": False,
    }
    assert entry["change"] == "demote"


async def test_a_p50_of_exactly_3_hours_is_not_met(engine: Engine) -> None:
    # Run 2's end-to-end time: 10 min queue (its first job's) + 2 h 50 min from its first
    # start to its last completion = exactly 3 h, the middle of 2 h, 3 h and 4 h.
    write(
        engine,
        [
            pr_job(1, queue=0.0, started=START, completed=START + 2 * HOUR),
            pr_job(2, "a", queue=600.0, started=START, completed=START + HOUR),
            pr_job(2, "b", queue=900.0, started=START + 5 * MINUTE, completed=START + 170 * MINUTE),
            pr_job(3, queue=0.0, started=START, completed=START + 4 * HOUR),
        ],
    )

    entry = await status_of(engine)

    assert criterion(entry, "e2e_p50_hours") == {
        "criterion": "e2e_p50_hours",
        "measured": 3.0,
        "target": "< 3 h",
        "met": False,
    }
    assert entry["change"] == "demote"
    assert_level_rollups_match_rows(engine)


async def test_an_even_count_of_runs_takes_the_mean_of_the_middle_two(engine: Engine) -> None:
    write(
        engine,
        [
            pr_job(run, queue=0.0, started=START, completed=START + hours * HOUR)
            for run, hours in enumerate((1, 2, 4, 5))
        ],
    )

    assert criterion(await status_of(engine), "e2e_p50_hours")["measured"] == 3.0


async def test_no_jobs_in_the_window_is_no_verdict(engine: Engine) -> None:
    write(engine, runs_of(10, 0), now=NOW - timedelta(days=7))

    entry = await status_of(engine)

    assert (entry["noData"], entry["change"]) == (True, None)
    assert [c["met"] for c in entry["criteria"]] == [None, None, None]


async def test_the_window_is_today_and_the_six_days_before(engine: Engine) -> None:
    write(engine, runs_of(10, 0), now=NOW.replace(hour=0) - timedelta(days=6))

    assert (await status_of(engine))["change"] == "demote"


async def test_the_latest_attempt_wins(engine: Engine) -> None:
    write(engine, [pr_job(1, conclusion="failure")])
    write(engine, [pr_job(1, attempt=2, conclusion=None)])
    assert daily(engine) == {
        "jobs": 1,
        "success": 0,
        "timed_out": 0,
        "overrun": 0,
        "queue_ms_sum": 60000,
        "queue_n": 1,
    }, "attempt 1 counts while attempt 2 is still running"

    write(engine, [pr_job(1, attempt=2, conclusion="success", queue=None)])

    entry = await status_of(engine)
    assert criterion(entry, "job_pass_rate")["measured"] == 100.0
    assert daily(engine)["jobs"] == 1 and daily(engine)["success"] == 1
    assert_level_rollups_match_rows(engine)


async def test_a_late_earlier_attempt_does_not_displace_the_later_one(engine: Engine) -> None:
    write(engine, [pr_job(1, attempt=2, conclusion="success")])
    write(engine, [pr_job(1, attempt=1, conclusion="failure")])

    assert daily(engine)["success"] == 1 and daily(engine)["jobs"] == 1
    assert_level_rollups_match_rows(engine)


async def test_only_completed_pull_request_jobs_count(engine: Engine) -> None:
    write(
        engine,
        [
            pr_job(1, conclusion="failure", event_type="push"),
            pr_job(2, conclusion=None),
            pr_job(3, conclusion="success"),
        ],
    )

    assert daily(engine)["jobs"] == 1


async def test_rollups_follow_a_row_from_in_progress_to_completed(engine: Engine) -> None:
    write(engine, [pr_job(1, conclusion=None)])
    assert (await status_of(engine))["noData"] is True

    write(engine, [pr_job(1, conclusion="success", queue=None, execution=4 * 3600.0)])

    assert daily(engine) == {
        "jobs": 1,
        "success": 1,
        "timed_out": 0,
        "overrun": 1,
        "queue_ms_sum": 60000,
        "queue_n": 1,
    }
    assert_level_rollups_match_rows(engine)


async def test_a_completion_replacing_a_timeout_replaces_its_contribution(engine: Engine) -> None:
    write(engine, [pr_job(1, conclusion=None)])
    write(engine, [pr_job(1, conclusion="timed_out", execution=None)], now=NOW - timedelta(days=1))
    assert daily(engine)["timed_out"] == 1

    write(engine, [pr_job(1, conclusion="success", execution=300.0)])

    assert daily(engine) == {
        "jobs": 1,
        "success": 1,
        "timed_out": 0,
        "overrun": 0,
        "queue_ms_sum": 60000,
        "queue_n": 1,
    }
    assert_level_rollups_match_rows(engine)


async def test_days_at_l2_count_from_the_first_l2_result(engine: Engine) -> None:
    write(engine, [pr_job(1, level="L2")], now=NOW - timedelta(days=30))
    write(engine, runs_of(10, 10), now=NOW)
    write(engine, [pr_job(50, level="L2")])

    entry = await status_of(engine)

    assert criterion(entry, "days_at_l2") == {
        "criterion": "days_at_l2",
        "measured": 30.0,
        "target": "≥ 30 days",
        "met": True,
    }


async def test_29_days_and_23_hours_at_l2_is_not_30(engine: Engine) -> None:
    write(engine, [pr_job(1, level="L2")], now=NOW - timedelta(days=30) + HOUR)
    write(engine, [pr_job(2, level="L2")])

    entry = await status_of(engine)

    assert criterion(entry, "days_at_l2")["measured"] == 29.0
    assert criterion(entry, "days_at_l2")["met"] is False
    assert entry["change"] is None


async def test_a_ready_l2_backend_is_proposed_for_promotion(engine: Engine) -> None:
    write(engine, [pr_job(1, level="L2")], now=NOW - timedelta(days=40))
    write(engine, [pr_job(run, level="L2") for run in range(2, 20)])

    entry = await status_of(engine)

    assert (entry["level"], entry["change"], entry["windowDays"]) == ("L2", "promote", 14)
    assert all(c["met"] is True for c in entry["criteria"])


async def test_allowlisted_levels_win_and_l1_gets_no_verdict(engine: Engine) -> None:
    write(engine, runs_of(10, 0))
    levels = {"ACME/xpu-backend": "L1", "other/quiet": "L4"}

    entry = await status_of(engine, "acme/xpu-backend", levels)
    quiet = await status_of(engine, "other/quiet", levels)

    assert (entry["repo"], entry["level"], entry["change"], entry["criteria"]) == (
        "ACME/xpu-backend",
        "L1",
        None,
        [],
    )
    assert (quiet["level"], quiet["noData"], quiet["change"]) == ("L4", True, None)


async def test_demotions_come_from_the_lookup(engine: Engine) -> None:
    write(engine, runs_of(10, 0))
    service = LevelStatusService(engine, LevelCriteria())

    class Demotions:
        async def demotions(self) -> Mapping[str, Demotion]:
            since = datetime(2026, 11, 19, 8, 30, tzinfo=UTC)
            return {REPO: Demotion(since, "https://github.com/pytorch/pytorch/pull/7")}

    assert (await service.status(NOW))["repos"][0]["demoted"] is None
    service.demotion_lookup = Demotions()
    assert (await service.status(NOW))["repos"][0]["demoted"] == {
        "since": "2026-11-19T08:30:00Z",
        "pr_url": "https://github.com/pytorch/pytorch/pull/7",
    }


async def test_the_median_is_exact_among_runs_a_millisecond_apart(engine: Engine) -> None:
    ms = timedelta(milliseconds=1)
    write(
        engine,
        [
            pr_job(run, queue=0.0, started=START, completed=START + 3 * HOUR + offset * ms)
            for run, offset in enumerate((-2, -1, 0, 1, 2))
        ],
    )

    entry = await status_of(engine)

    assert criterion(entry, "e2e_p50_hours")["met"] is False
    write(engine, [pr_job(9, queue=0.0, started=START, completed=START + HOUR)])
    assert criterion(await status_of(engine), "e2e_p50_hours")["met"] is True  # 3 h - 0.5 ms
    assert_level_rollups_match_rows(engine)

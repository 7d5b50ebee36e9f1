"""The demo's history: a fortnight of plausible results, one backend slipping in its last week."""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime, timedelta

from crcr.demo.backends import DEGRADING_BACKEND, DEMO_BACKENDS, DEMO_UPSTREAM
from crcr.demo.history import RUNS_PER_DAY, SLIPPING_EVERY, history_bodies
from crcr.hud.write.ingest import parse_result_body

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def bodies(days: int = 14) -> list[tuple[dict[str, object], datetime]]:
    return history_bodies(
        DEMO_BACKENDS,
        days=days,
        now=NOW,
        rng=random.Random(7),
        upstream=DEMO_UPSTREAM,
        slipping=DEGRADING_BACKEND,
    )


def test_every_body_is_one_the_hud_accepts_for_a_backend_at_l2_or_above() -> None:
    history = bodies()
    reports = [parse_result_body(body) for body, _ in history]
    levels = {b.repo: b.level for b in DEMO_BACKENDS}
    assert {r.downstream_repo for r in reports} == {
        repo for repo, level in levels.items() if level != "L1"
    }
    assert all(r.status == "completed" and r.event_type == "pull_request" for r in reports)
    assert len({r.job_key for r in reports}) == len(reports)
    received = [at for _, at in history]
    assert received == sorted(received)
    assert NOW - timedelta(days=14) <= received[0] and received[-1] < NOW


def test_the_slipping_backend_passes_four_jobs_in_five_in_its_last_week() -> None:
    week = NOW - timedelta(days=7)
    outcomes: Counter[str] = Counter()
    for body, at in bodies():
        report = parse_result_body(body)
        if report.downstream_repo == DEGRADING_BACKEND and at > week + timedelta(hours=1):
            outcomes[str(report.conclusion)] += 1
    failing = outcomes["failure"] / sum(outcomes.values())
    assert abs(failing - 1 / SLIPPING_EVERY) < 0.02


def test_the_number_of_runs_follows_the_days_asked_for() -> None:
    def runs(days: int) -> int:
        return len({parse_result_body(body).run_id for body, _ in bodies(days)})

    assert runs(1) == RUNS_PER_DAY and runs(3) == 3 * RUNS_PER_DAY
    assert bodies(0) == []

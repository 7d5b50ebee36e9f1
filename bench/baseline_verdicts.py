"""How fast the HUD gives a PR's failed jobs their baseline verdicts (SPEC §11).

Called by `bench.hud_store` after its bulk load: one pull request whose head failed one
job per (backend, job name), 50 by default, is added; then `HudQueries.baseline_verdicts`
(what the relay asks for a check-run summary) and the PR view (which classifies the same
jobs while reading them) are timed. Half the failed jobs name failed tests, so the test-name
comparison runs too.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, insert

from crcr.hud.models import JOBS
from crcr.hud.queries import HudQueries

PR_NUMBER = 1
HEAD_SHA = "f" * 40

Timer = Callable[[Callable[[], Awaitable[Any]], int], Awaitable[list[float]]]


def failing_pr_rows(
    now: datetime, repos: Sequence[str], job_names: Sequence[str]
) -> list[dict[str, Any]]:
    """One failed row per (repo, job) on the PR's head, completed at `now`."""
    rows = []
    for r, repo in enumerate(repos):
        for j, job in enumerate(job_names):
            names = [{"name": f"test_op_{(r + j) % 7}"}] if j % 2 else None
            rows.append(
                {
                    "job_key": f"bench-pr-{r}-{j}",
                    "downstream_repo": repo,
                    "downstream_repo_level": "L3",
                    "upstream_repo": "pytorch/pytorch",
                    "event_type": "pull_request",
                    "pr_number": PR_NUMBER,
                    "head_sha": HEAD_SHA,
                    "delivery_id": "bench-pr",
                    "workflow_name": "CI",
                    "job_name": job,
                    "run_id": f"pr-{r}",
                    "run_attempt": 1,
                    "check_run_id": f"pr-{r}-{j}",
                    "status": "completed",
                    "conclusion": "failure",
                    "started_at": now,
                    "completed_at": now,
                    "failed_tests": json.dumps({"tests": names, "dropped": 0}) if names else None,
                    "received_at": now,
                    "updated_at": now,
                    "activity_at": now,
                    "day": now.date(),
                }
            )
    return rows


async def time_baseline(
    engine: Engine,
    now: datetime,
    repos: Sequence[str],
    job_names: Sequence[str],
    timed: Timer,
    samples: int,
) -> dict[str, list[float]]:
    """Milliseconds per call of the two reads that classify the PR's failed jobs."""
    rows = failing_pr_rows(now, repos, job_names)
    with engine.begin() as connection:
        connection.execute(insert(JOBS), rows)
    queries = HudQueries(engine)
    verdicts = await queries.baseline_verdicts(PR_NUMBER, HEAD_SHA)
    counts: dict[str, int] = {}
    for verdict in verdicts.values():
        counts[verdict] = counts.get(verdict, 0) + 1
    print(f"baseline verdicts of {len(rows)} failed jobs: {dict(sorted(counts.items()))}")
    return {
        f"baseline verdicts, {len(rows)} failed jobs": await timed(
            lambda: queries.baseline_verdicts(PR_NUMBER, HEAD_SHA), samples
        ),
        f"PR view with {len(rows)} classified failures": await timed(
            lambda: queries.pr(PR_NUMBER), samples
        ),
    }

"""A backend's noise floor (SPEC §14): how often two runs of one commit disagree.

Every `CRCR_AA_INTERVAL` the relay dispatches one upstream SHA twice to each L3+
backend (`crcr_aa`, delivery ids `crcr-aa-<pair>-1` and `-2`). A pair whose two runs
both reached a verdict counts; one that passed once and failed once is noise. The rate
is shown beside the level criteria as information (`met: null`): a backend is never
judged on it alone, but its pass rate reads differently beside a 10 % noise floor.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, select

from crcr.hud.levels.judge import CriterionResult, Verdict
from crcr.hud.models import ACTIVITY_ROWS, JOBS, fixed

AA_EVENT = "crcr_aa"
AA_PREFIX = "crcr-aa-"
WINDOW_DAYS = 90
"""A quarter: about thirteen weekly pairs, enough to tell 0 % from 20 %."""
CRITERION = "noise_rate"


@dataclass(frozen=True)
class NoiseRate:
    """Disagreeing pairs over counted pairs (None with no pair counted yet)."""

    disagreeing: int
    pairs: int

    @property
    def rate(self) -> float | None:
        """The fraction from 0 to 1, or None before the first pair."""
        return None if self.pairs == 0 else round(self.disagreeing / self.pairs, 3)


def pair_of(delivery_id: str) -> str | None:
    """The pair a `crcr_aa` delivery belongs to, or None for another delivery."""
    if not delivery_id.startswith(AA_PREFIX) or "-" not in delivery_id[len(AA_PREFIX) :]:
        return None
    return delivery_id.rsplit("-", 1)[0]


def run_verdict(conclusions: Sequence[tuple[str, str | None]]) -> str | None:
    """`failure` if a job failed, `success` if every job passed; else no verdict."""
    if any(c in ("failure", "timed_out") for _, c in conclusions):
        return "failure"
    if conclusions and all(s == "completed" and c == "success" for s, c in conclusions):
        return "success"
    return None


def noise_of(rows: Sequence[tuple[str, str, str, str | None]]) -> NoiseRate:
    """The noise rate from (delivery id, job, status, conclusion) rows at latest attempts."""
    runs: dict[str, list[tuple[str, str | None]]] = {}
    for delivery_id, _job, status, conclusion in rows:
        runs.setdefault(delivery_id, []).append((status, conclusion))
    pairs: dict[str, list[str | None]] = {}
    for delivery_id, jobs in runs.items():
        pair = pair_of(delivery_id)
        if pair is not None:
            pairs.setdefault(pair, []).append(run_verdict(jobs))
    judged = [v for v in pairs.values() if len(v) == 2 and None not in v]
    return NoiseRate(sum(1 for a, b in judged if a != b), len(judged))


def noise_rates(
    connection: Connection, repos: Collection[str], now: datetime
) -> dict[str, NoiseRate]:
    """Each backend's noise rate over the last `WINDOW_DAYS` (backends without pairs: 0/0)."""
    if not repos:
        return {}
    query = (
        select(
            JOBS.c.downstream_repo,
            JOBS.c.delivery_id,
            JOBS.c.workflow_name,
            JOBS.c.job_name,
            JOBS.c.status,
            JOBS.c.conclusion,
        )
        .where(
            JOBS.c.downstream_repo.in_(list(repos)),
            JOBS.c.event_type == fixed(AA_EVENT),
            JOBS.c.activity_at >= now - timedelta(days=WINDOW_DAYS),
            ACTIVITY_ROWS,
        )
        .order_by(JOBS.c.run_attempt)
    )
    latest: dict[str, dict[tuple[str, str, str], tuple[str, str | None]]] = {}
    for row in connection.execute(query):
        key = (row.delivery_id, row.workflow_name, row.job_name)
        latest.setdefault(row.downstream_repo, {})[key] = (row.status, row.conclusion)
    return {
        repo: noise_of(
            [(d, f"{w}\x00{j}", s, c) for (d, w, j), (s, c) in latest.get(repo, {}).items()]
        )
        for repo in repos
    }


def with_noise(verdict: Verdict, noise: NoiseRate | None) -> Verdict:
    """The verdict with its `noise_rate` information row, once a pair has been judged.

    Before that there is nothing to inform about, and the criteria read as they always did.
    """
    if noise is None or noise.pairs == 0:
        return verdict
    row = CriterionResult(CRITERION, noise.rate, f"information ({noise.pairs} A/A pairs)", None)
    return Verdict(
        change=verdict.change,
        no_data=verdict.no_data,
        window_days=verdict.window_days,
        criteria=(*verdict.criteria, row),
    )

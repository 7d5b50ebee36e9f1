"""Every backend's jobs for one upstream PR (index on pr_number), failures with their baseline."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from sqlalchemy import Engine, select

from crcr.hud.baseline.reader import verdicts_of_rows
from crcr.hud.models import BACKENDS, JOBS
from crcr.hud.records import JobRow, job_row
from crcr.hud.write.path_skips import skipped_heads

MAX_PR_NUMBER = 2**31 - 1
"""The largest number `pr_number` (an SQL INTEGER) can hold: no PR beyond it has rows."""


@dataclass(frozen=True)
class PrBackendJobs:
    """One backend's jobs for an upstream PR, newest first."""

    repo: str
    level: str | None
    jobs: tuple[JobRow, ...]


@dataclass(frozen=True)
class PathSkipped:
    """A backend not dispatched a head of the PR: it touches none of its paths (SPEC §15)."""

    repo: str
    head_sha: str
    reason: str = "skipped: no matching paths"


@dataclass(frozen=True)
class PrView:
    """Every backend's jobs for one upstream PR, and the heads path filters skipped."""

    pr_number: int
    head_shas: tuple[str, ...]
    backends: tuple[PrBackendJobs, ...]
    skipped: tuple[PathSkipped, ...] = ()


def read_pr(engine: Engine, number: int) -> PrView:
    """Every backend's jobs for an upstream PR, newest first within each backend."""
    if not 0 < number <= MAX_PR_NUMBER:
        # The database refuses such a number outright (a 500): it names no PR.
        return PrView(pr_number=number, head_shas=(), backends=())
    with engine.connect() as connection:
        rows = (
            connection.execute(
                select(JOBS)
                .where(JOBS.c.pr_number == number)
                .order_by(JOBS.c.downstream_repo, JOBS.c.activity_at.desc(), JOBS.c.id.desc())
            )
            .mappings()
            .all()
        )
        repos = sorted({row["downstream_repo"] for row in rows})
        levels = dict(
            connection.execute(
                select(BACKENDS.c.repo, BACKENDS.c.level).where(BACKENDS.c.repo.in_(repos))
            ).all()
        )
        verdicts = verdicts_of_rows(connection, rows)
    ran = {(row["downstream_repo"], row["head_sha"]) for row in rows}
    skipped = tuple(
        PathSkipped(repo, sha)
        for repo, sha in skipped_heads(engine, number)
        if (repo, sha) not in ran
    )
    by_repo: dict[str, list[JobRow]] = defaultdict(list)
    for row in rows:
        by_repo[row["downstream_repo"]].append(job_row(row, verdicts.get(row["job_key"])))
    newest_first = sorted(rows, key=lambda row: row["activity_at"], reverse=True)
    head_shas = tuple(dict.fromkeys(row["head_sha"] for row in newest_first))
    return PrView(
        pr_number=number,
        head_shas=head_shas,
        backends=tuple(
            PrBackendJobs(repo=repo, level=levels.get(repo), jobs=tuple(by_repo[repo]))
            for repo in repos
        ),
        skipped=skipped,
    )

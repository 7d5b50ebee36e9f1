"""Find each failed pull-request job's baseline in the results store, and give its verdict.

The baseline is the latest completed push result of the same job (backend, workflow and
job name, for the same upstream repo) that the HUD learnt of no later than it learnt of
the PR job's result. A row does not hold the PR's base SHA, nor the branch a push went
to, so "the default branch's result before the PR's base" is approximated by time: push
rows are the default branch's (the relay dispatches pushes to other branches only when
configured to), and the cut-off is the PR job's own `activity_at`. Times are the HUD's
clock (`activity_at`, on every row) rather than the downstream's self-reported
`completed_at`, which may be missing or skewed.

One index seek per failed job (`ix_hud_jobs_baseline`, of push rows alone), at most one
per distinct (job, cut-off); on PostgreSQL all of a page's seeks go in one statement,
since each statement there costs a round trip and most of its ~0.4 ms is not the seek.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ARRAY,
    Connection,
    DateTime,
    Engine,
    String,
    bindparam,
    column,
    func,
    select,
    true,
)

from crcr.hud.baseline.verdicts import (
    DECISIVE_CONCLUSIONS,
    FLAKY,
    BaselineKey,
    Run,
    Verdict,
    against_baseline,
    passed_on_retry,
)
from crcr.hud.models import JOBS, PUSH_ROWS, fixed
from crcr.hud.records import failed_tests_of

_RUN_COLUMNS = (
    JOBS.c.job_key,
    JOBS.c.downstream_repo,
    JOBS.c.workflow_name,
    JOBS.c.job_name,
    JOBS.c.run_id,
    JOBS.c.run_attempt,
    JOBS.c.head_sha,
    JOBS.c.status,
    JOBS.c.conclusion,
    JOBS.c.activity_at,
    JOBS.c.failed_tests,
)

_LATEST_PUSH_RESULT = (
    select(*_RUN_COLUMNS)
    .where(
        JOBS.c.downstream_repo == bindparam("repo"),
        PUSH_ROWS,
        JOBS.c.workflow_name == bindparam("workflow"),
        JOBS.c.job_name == bindparam("job"),
        JOBS.c.activity_at <= bindparam("before"),
        JOBS.c.upstream_repo == bindparam("upstream"),
        JOBS.c.status == fixed("completed"),
        JOBS.c.conclusion.in_(sorted(DECISIVE_CONCLUSIONS)),
    )
    .order_by(JOBS.c.activity_at.desc())
    .limit(1)
)


def _latest_push_results_postgresql() -> Any:
    """`_LATEST_PUSH_RESULT` for many jobs at once: a lateral seek per row of the key arrays."""
    keys = (
        func.unnest(
            *(bindparam(name, type_=ARRAY(String())) for name in ("repos", "workflows", "jobs")),
            bindparam("befores", type_=ARRAY(DateTime(timezone=True))),
            bindparam("upstreams", type_=ARRAY(String())),
        )
        .table_valued(
            column("repo", String()),
            column("workflow", String()),
            column("job", String()),
            column("before", DateTime(timezone=True)),
            column("upstream", String()),
            with_ordinality="lookup",
        )
        .render_derived(name="k", with_types=False)
    )
    latest = (
        select(*_RUN_COLUMNS)
        .where(
            JOBS.c.downstream_repo == keys.c.repo,
            PUSH_ROWS,
            JOBS.c.workflow_name == keys.c.workflow,
            JOBS.c.job_name == keys.c.job,
            JOBS.c.activity_at <= keys.c.before,
            JOBS.c.upstream_repo == keys.c.upstream,
            JOBS.c.status == fixed("completed"),
            JOBS.c.conclusion.in_(sorted(DECISIVE_CONCLUSIONS)),
        )
        .order_by(JOBS.c.activity_at.desc())
        .limit(1)
        .lateral("latest")
    )
    return select(keys.c.lookup, latest).select_from(keys.join(latest, true()))


_LATEST_PUSH_RESULTS_POSTGRESQL = _latest_push_results_postgresql()

Lookup = tuple[str, BaselineKey, datetime]
"""(upstream repo, job, cut-off): what finds one baseline."""


def run_of(row: Mapping[Any, Any]) -> Run:
    """A stored row as the classifier's `Run`."""
    tests, _ = failed_tests_of(row["failed_tests"])
    return Run(
        row_key=row["job_key"],
        repo=row["downstream_repo"],
        workflow=row["workflow_name"],
        job=row["job_name"],
        run_id=row["run_id"],
        run_attempt=row["run_attempt"],
        head_sha=row["head_sha"],
        status=row["status"],
        conclusion=row["conclusion"],
        at=row["activity_at"],
        failed_tests=frozenset(test.name for test in tests) if tests else None,
    )


def latest_push_result(
    connection: Connection, upstream: str, job: BaselineKey, before: datetime
) -> Run | None:
    """The baseline of `job`: its latest decisive push result no later than `before`."""
    repo, workflow, job_name = job
    row = (
        connection.execute(
            _LATEST_PUSH_RESULT,
            {
                "repo": repo,
                "workflow": workflow,
                "job": job_name,
                "before": before,
                "upstream": upstream,
            },
        )
        .mappings()
        .first()
    )
    return None if row is None else run_of(row)


def latest_push_results(
    connection: Connection, lookups: Sequence[Lookup]
) -> dict[Lookup, Run | None]:
    """The baseline of each lookup (None where there is none)."""
    if connection.dialect.name != "postgresql" or len(lookups) < 2:
        return {lookup: latest_push_result(connection, *lookup) for lookup in lookups}
    found: dict[Lookup, Run | None] = dict.fromkeys(lookups)
    params = {
        "repos": [job[0] for _, job, _ in lookups],
        "workflows": [job[1] for _, job, _ in lookups],
        "jobs": [job[2] for _, job, _ in lookups],
        "befores": [before for _, _, before in lookups],
        "upstreams": [upstream for upstream, _, _ in lookups],
    }
    for row in connection.execute(_LATEST_PUSH_RESULTS_POSTGRESQL, params).mappings():
        found[lookups[row["lookup"] - 1]] = run_of(row)
    return found


def verdicts_of_rows(
    connection: Connection, rows: Sequence[Mapping[Any, Any]]
) -> dict[str, Verdict]:
    """The verdict of every failed PR job among `rows`, by row key (`job_key`).

    `rows` must hold every attempt of the jobs they contain (all rows of a PR, or of a
    head SHA), or a re-run that passed would go unseen and `flaky` be missed.
    """
    pr_rows = [row for row in rows if row["pr_number"] > 0]
    runs = [run_of(row) for row in pr_rows]
    verdicts: dict[str, Verdict] = {}
    compared: dict[str, tuple[Run, Lookup]] = {}
    for row, run in zip(pr_rows, runs, strict=True):
        if not run.failed:
            continue
        if passed_on_retry(run, runs):
            verdicts[run.row_key] = FLAKY
        else:
            compared[run.row_key] = (run, (row["upstream_repo"], run.job_key, run.at))
    lookups = list(dict.fromkeys(lookup for _, lookup in compared.values()))
    found = latest_push_results(connection, lookups)
    for key, (run, lookup) in compared.items():
        verdicts[key] = against_baseline(run, found[lookup])
    return verdicts


def verdicts_by_job(
    rows: Sequence[Mapping[Any, Any]], verdicts: Mapping[str, Verdict]
) -> dict[BaselineKey, Verdict]:
    """Per job, the verdict of its latest failed attempt (the one a check run reports)."""
    latest: dict[BaselineKey, tuple[tuple[int, datetime], Verdict]] = {}
    for row in rows:
        verdict = verdicts.get(row["job_key"])
        if verdict is None:
            continue
        key = (row["downstream_repo"], row["workflow_name"], row["job_name"])
        order = (row["run_attempt"], row["activity_at"])
        if key not in latest or order > latest[key][0]:
            latest[key] = (order, verdict)
    return {key: verdict for key, (_, verdict) in latest.items()}


def read_baseline_verdicts(
    engine: Engine, pr_number: int, head_sha: str
) -> dict[BaselineKey, Verdict]:
    """The verdict of each failed job of a PR's head SHA, keyed by (repo, workflow, job)."""
    with engine.connect() as connection:
        rows = (
            connection.execute(
                select(JOBS).where(JOBS.c.pr_number == pr_number, JOBS.c.head_sha == head_sha)
            )
            .mappings()
            .all()
        )
        verdicts = verdicts_of_rows(connection, rows)
    return verdicts_by_job(rows, verdicts)

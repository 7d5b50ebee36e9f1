"""Shape query results into what the templates show: level groups, matrix headers, tallies.

Pure functions over the `crcr.hud.reads` dataclasses; the routes stay thin and
these are tested without a server.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from markupsafe import Markup

from crcr.hud.reads.backend import BackendPage, JobAttempt, JobCell
from crcr.hud.reads.pr import PrView
from crcr.hud.reads.summary import BackendSummaryRow
from crcr.hud.records import JobRow
from crcr.hud.web import charts, display, failures

LEVEL_ORDER = ("L4", "L3", "L2", "L1")
LEVEL_HINTS = {
    "L4": "a check run on every upstream PR, blocking",
    "L3": "check runs on opted-in PRs, non-blocking",
    "L2": "results on the HUD",
    "L1": "dispatched to, results not collected",
    None: "reported results but is no longer on the allowlist",
}


@dataclass(frozen=True)
class LevelGroup:
    """The summary table of one allowlist level, worst pass rate first."""

    level: str | None
    title: str
    hint: str
    rows: tuple[BackendSummaryRow, ...]


@dataclass(frozen=True)
class ColumnHeader:
    """A matrix column, split so the header can show the workflow above the job."""

    column: str
    workflow: str
    job: str


@dataclass(frozen=True)
class PrJob:
    """One job on the PR page: its latest attempt and the attempts it superseded."""

    latest: JobRow
    outcome: str
    earlier: tuple[JobRow, ...]
    baseline: str | None = None


@dataclass(frozen=True)
class PrBackend:
    """One backend's panel on the PR page."""

    repo: str
    level: str | None
    jobs: tuple[PrJob, ...]
    tally: tuple[tuple[str, int], ...]


def _worst_first(row: BackendSummaryRow) -> tuple[int, float, str]:
    """Sort key: backends with data by ascending pass rate, then those without data."""
    if row.pass_rate is None:
        return (1, 0.0, row.repo)
    return (0, row.pass_rate, row.repo)


def group_by_level(rows: Iterable[BackendSummaryRow]) -> tuple[LevelGroup, ...]:
    """Group backends by level, L4 first; a level with no backends is left out."""
    buckets: dict[str | None, list[BackendSummaryRow]] = defaultdict(list)
    for row in rows:
        buckets[row.level if row.level in LEVEL_ORDER else None].append(row)
    groups = []
    for level in (*LEVEL_ORDER, None):
        if buckets[level]:
            groups.append(
                LevelGroup(
                    level=level,
                    title=display.LEVEL_NAMES.get(level or "", "Not on the allowlist"),
                    hint=LEVEL_HINTS[level],
                    rows=tuple(sorted(buckets[level], key=_worst_first)),
                )
            )
    return tuple(groups)


def trend_sparkline(row: BackendSummaryRow) -> Markup:
    """The pass-rate trend of a summary row, on a fixed 0-100 % scale."""
    values = [point.pass_rate for point in row.trend]
    known = [(p.day, p.pass_rate) for p in row.trend if p.pass_rate is not None]
    label = "pass rate by day: " + (
        ", ".join(f"{day:%b %d} {display.percent(rate)}" for day, rate in known) or "no data"
    )
    return Markup(sparkline_svg(values, label))  # noqa: S704 - charts escape all text


def sparkline_svg(values: Sequence[float | None], label: str) -> str:
    """A pass-rate sparkline: wide enough to read a month of daily points."""
    return charts.sparkline(
        values, width=max(84, min(120, 4 * len(values))), low=0.0, high=1.0, label=label
    )


def matrix_headers(page: BackendPage) -> tuple[ColumnHeader, ...]:
    """Split each column into workflow and job, using any cell of that column."""
    sample: dict[str, JobCell] = {}
    for row in page.rows:
        for column, row_cell in row.cells.items():
            sample.setdefault(column, row_cell)
    headers = []
    for column in page.columns:
        cell = sample.get(column)
        if cell is None:
            workflow, _, job = column.rpartition(" / ")
        else:
            workflow, job = cell.workflow_name, _column_job(column, cell)
        headers.append(ColumnHeader(column=column, workflow=workflow, job=job or column))
    return tuple(headers)


def _column_job(column: str, cell: JobCell) -> str:
    """The job part of a column name (which may carry the workflow as a prefix)."""
    for separator in (" / ", "/", ": "):
        prefix = cell.workflow_name + separator
        if column.startswith(prefix):
            return column[len(prefix) :]
    return column


def cell_outcome(cell: JobCell) -> str:
    """The outcome word a matrix cell is coloured by."""
    return display.outcome(cell.status, cell.conclusion)


def attempt_outcome(attempt: JobAttempt) -> str:
    """The outcome word of an earlier attempt."""
    return display.outcome(attempt.status, attempt.conclusion)


def tests_text(job: JobCell | JobRow) -> str:
    """Test counts as `40 ✓ 2 ✗ 3 skipped`, or a dash when the job sent none."""
    if job.passed is None and job.failed is None and job.skipped is None:
        return "—"
    parts = [f"{job.passed or 0} passed"]
    if job.failed:
        parts.append(f"{job.failed} failed")
    if job.skipped:
        parts.append(f"{job.skipped} skipped")
    return ", ".join(parts)


def cell_tooltip(cell: JobCell) -> str:
    """Everything about a matrix cell in one line of hover text."""
    word = cell_outcome(cell).replace("_", " ")
    lines = [f"{cell.workflow_name} / {cell.job_name}: {word}"]
    if cell.shard_count > 1:
        lines.append(f"worst of {cell.shard_count} shards")
    lines.append(f"attempt {cell.run_attempt}")
    if cell.passed is not None or cell.failed is not None:
        lines.append(f"tests: {tests_text(cell)}")
    lines.append(f"queue {display.duration(cell.queue_time)}")
    lines.append(f"duration {display.duration(cell.duration)}")
    if cell.completed_at is not None:
        lines.append(f"finished {display.timestamp(cell.completed_at)}")
    if (shown := failures.mark(cell.baseline)) is not None:
        lines.append(shown.long)
    if cell.failed_tests:
        more = len(cell.failed_tests) - 3 + cell.failed_tests_dropped
        names = ", ".join(cell.failed_tests[:3]) + (f" (+{more} more)" if more > 0 else "")
        lines.append(f"failed: {names}")
    return " · ".join(lines)


def pr_backends(view: PrView) -> tuple[PrBackend, ...]:
    """Per backend, one line per job with its earlier attempts folded under it."""
    result = []
    for backend in view.backends:
        by_job: dict[tuple[str, str, str], list[JobRow]] = defaultdict(list)
        for record in backend.jobs:
            by_job[(record.head_sha, record.workflow_name, record.job_name)].append(record)
        jobs = []
        for records in by_job.values():
            ordered = sorted(records, key=_attempt_order, reverse=True)
            latest = ordered[0]
            baseline = latest.baseline
            if baseline is None and any(e.baseline == "flaky" for e in ordered[1:]):
                baseline = "flaky"  # failed, then passed on re-run
            jobs.append(
                PrJob(
                    latest=latest,
                    outcome=display.outcome(latest.status, latest.conclusion),
                    earlier=tuple(ordered[1:]),
                    baseline=baseline,
                )
            )
        jobs.sort(
            key=lambda j: (display.severity(j.outcome), j.latest.workflow_name, j.latest.job_name)
        )
        tally = Counter(j.outcome for j in jobs)
        result.append(
            PrBackend(
                repo=backend.repo,
                level=backend.level,
                jobs=tuple(jobs),
                tally=tuple(sorted(tally.items(), key=lambda item: display.severity(item[0]))),
            )
        )
    return tuple(result)


def pr_lead_line(backends: Sequence[PrBackend]) -> failures.LeadLine:
    """The PR page's first line, from the latest attempt of every job."""
    jobs = [
        failures.FailingJob(
            backend.repo,
            job.latest.conclusion if job.latest.status == "completed" else None,
            job.baseline,
        )
        for backend in backends
        for job in backend.jobs
    ]
    running = sum(
        1 for backend in backends for job in backend.jobs if job.latest.status != "completed"
    )
    return failures.lead_line(jobs, running)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _attempt_order(record: JobRow) -> tuple[int, datetime]:
    moment = record.completed_at or record.started_at or _EPOCH
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (record.run_attempt, moment)

"""The results store's tables: job executions, the backends seen, and the rollups kept on write.

The migrations under `crcr/hud/migrations/versions/` create exactly these tables; a change
here needs a new migration (the schema test compares the two).
"""

from __future__ import annotations

from datetime import UTC, date, datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    ColumnElement,
    Date,
    DateTime,
    Dialect,
    Float,
    Index,
    Integer,
    SmallInteger,
    String,
    Table,
    Text,
    TypeDecorator,
    literal_column,
    or_,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

ACTIVITY_INDEXED = "event_type <> 'pull_request' OR status = 'completed'"
BASELINE_INDEXED = "event_type = 'push'"
"""The rows `hud_jobs`' two partial indexes hold; a query states them as `ACTIVITY_ROWS`
and `PUSH_ROWS` to use them."""

# SQLite only auto-increments an INTEGER PRIMARY KEY; PostgreSQL gets a 64-bit key.
BigId = BigInteger().with_variant(Integer(), "sqlite")


class UtcDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes in and out, on SQLite (which keeps no zone) as on PostgreSQL."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        utc = value.astimezone(UTC)
        return utc.replace(tzinfo=None) if dialect.name == "sqlite" else utc

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    """Declarative base of the results store."""


class JobExecution(Base):
    """One job execution reported by a downstream backend (SPEC §6 row fields).

    `job_key` is a digest of the identity (downstream repo, delivery id, workflow name, job
    name, run id, run attempt, check run id): a re-run is a new row. `day` and
    `activity_at` are the rollup bucket the row currently counts in. `failed_tests` and
    `triage_verdict` are the downstream's claims as JSON text (SPEC §11, bounded on
    ingest); `confirmed` and `github_conclusion` are what GitHub said of the job;
    `expected_conclusion` what the job said it should conclude (SPEC §13, canary probes);
    `superseded_by` the newer head of its PR that superseded it (SPEC §15): no pass rate
    counts such a row.
    """

    __tablename__ = "hud_jobs"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    job_key: Mapped[str] = mapped_column(String(64), unique=True)
    downstream_repo: Mapped[str] = mapped_column(String(200))
    downstream_repo_level: Mapped[str | None] = mapped_column(String(8))
    upstream_repo: Mapped[str] = mapped_column(String(200))
    event_type: Mapped[str] = mapped_column(String(40))
    pr_number: Mapped[int] = mapped_column(Integer, default=0)
    head_sha: Mapped[str] = mapped_column(String(64), default="")
    delivery_id: Mapped[str] = mapped_column(String(200))
    workflow_name: Mapped[str] = mapped_column(String(300))
    job_name: Mapped[str] = mapped_column(String(300))
    run_id: Mapped[str] = mapped_column(String(40))
    run_attempt: Mapped[int] = mapped_column(Integer, default=1)
    check_run_id: Mapped[str] = mapped_column(String(40), default="")
    status: Mapped[str] = mapped_column(String(20))
    conclusion: Mapped[str | None] = mapped_column(String(30))
    started_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    completed_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    queue_time: Mapped[float | None] = mapped_column(Float)
    execution_time: Mapped[float | None] = mapped_column(Float)
    duration: Mapped[float | None] = mapped_column(Float)
    passed: Mapped[int | None] = mapped_column(Integer)
    failed: Mapped[int | None] = mapped_column(Integer)
    skipped: Mapped[int | None] = mapped_column(Integer)
    total_tests: Mapped[int | None] = mapped_column(Integer)
    workflow_run_url: Mapped[str | None] = mapped_column(Text)
    artifact_url: Mapped[str | None] = mapped_column(Text)
    failed_tests: Mapped[str | None] = mapped_column(Text)
    triage_verdict: Mapped[str | None] = mapped_column(Text)
    confirmed: Mapped[bool | None] = mapped_column(Boolean)
    github_conclusion: Mapped[str | None] = mapped_column(String(30))
    expected_conclusion: Mapped[str | None] = mapped_column(String(30))
    superseded_by: Mapped[str | None] = mapped_column(String(64))
    received_at: Mapped[datetime] = mapped_column(UtcDateTime)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime)
    activity_at: Mapped[datetime] = mapped_column(UtcDateTime)
    day: Mapped[date] = mapped_column(Date)

    # Two partial indexes leave out rows no query reads through them: every index a
    # write touches is a page more for the commit to write and fsync. The activity index
    # serves a backend's newest jobs of an event type (health, culprits, badges, the noise
    # floor), none of which reads a pull-request job still running: such a row, most
    # of those written, enters it once, as it completes. The baseline index only ever
    # seeks push rows.
    __table_args__ = (
        Index(
            "ix_hud_jobs_repo_event_activity",
            "downstream_repo",
            "event_type",
            "activity_at",
            sqlite_where=text(ACTIVITY_INDEXED),
            postgresql_where=text(ACTIVITY_INDEXED),
        ),
        Index("ix_hud_jobs_repo_sha", "downstream_repo", "head_sha"),
        Index("ix_hud_jobs_pr", "pr_number"),
        Index("ix_hud_jobs_day", "day"),
        # A failed PR job's baseline: the latest push result of the same job (SPEC §11).
        Index(
            "ix_hud_jobs_baseline",
            "downstream_repo",
            "workflow_name",
            "job_name",
            "activity_at",
            sqlite_where=text(BASELINE_INDEXED),
            postgresql_where=text(BASELINE_INDEXED),
        ),
    )


class Commit(Base):
    """An upstream commit a backend tested, with its job count and latest activity.

    Kept on write so that a backend page lists its newest commits from an index on
    (repo, last activity) instead of grouping every job row in the window.
    """

    __tablename__ = "hud_commits"

    downstream_repo: Mapped[str] = mapped_column(String(200), primary_key=True)
    pr_number: Mapped[int] = mapped_column(Integer, primary_key=True)
    head_sha: Mapped[str] = mapped_column(String(64), primary_key=True)
    event_type: Mapped[str] = mapped_column(String(40))
    jobs: Mapped[int] = mapped_column(Integer, default=0)
    last_activity_at: Mapped[datetime] = mapped_column(UtcDateTime)

    __table_args__ = (
        Index(
            "ix_hud_commits_repo_activity_pr", "downstream_repo", "last_activity_at", "pr_number"
        ),
        Index("ix_hud_commits_activity", "last_activity_at"),
    )


class Backend(Base):
    """A downstream repo that has reported at least once; `level` is its latest."""

    __tablename__ = "hud_backends"

    repo: Mapped[str] = mapped_column(String(200), primary_key=True)
    level: Mapped[str | None] = mapped_column(String(8))
    first_seen_at: Mapped[datetime] = mapped_column(UtcDateTime)
    last_run_at: Mapped[datetime] = mapped_column(UtcDateTime)


class DailyRollup(Base):
    """Counts and sums per (backend, day, event type), adjusted by every job write.

    Times are summed in integer milliseconds so that subtracting a row's old contribution
    restores the previous value exactly (float sums would drift).
    """

    __tablename__ = "hud_rollup_daily"

    downstream_repo: Mapped[str] = mapped_column(String(200), primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    event_type: Mapped[str] = mapped_column(String(40), primary_key=True)
    jobs: Mapped[int] = mapped_column(Integer, default=0)
    in_progress: Mapped[int] = mapped_column(Integer, default=0)
    completed: Mapped[int] = mapped_column(Integer, default=0)
    success: Mapped[int] = mapped_column(Integer, default=0)
    failure: Mapped[int] = mapped_column(Integer, default=0)
    cancelled: Mapped[int] = mapped_column(Integer, default=0)
    timed_out: Mapped[int] = mapped_column(Integer, default=0)
    skipped: Mapped[int] = mapped_column(Integer, default=0)
    other: Mapped[int] = mapped_column(Integer, default=0)
    queue_ms_sum: Mapped[int] = mapped_column(BigInteger, default=0)
    queue_n: Mapped[int] = mapped_column(Integer, default=0)
    execution_ms_sum: Mapped[int] = mapped_column(BigInteger, default=0)
    execution_n: Mapped[int] = mapped_column(Integer, default=0)
    duration_ms_sum: Mapped[int] = mapped_column(BigInteger, default=0)
    duration_n: Mapped[int] = mapped_column(Integer, default=0)


class LatencyBucket(Base):
    """A per-day log-scale histogram of queue (metric 0) and execution (metric 1) time."""

    __tablename__ = "hud_latency_buckets"

    downstream_repo: Mapped[str] = mapped_column(String(200), primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    metric: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    bucket: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    count: Mapped[int] = mapped_column(Integer, default=0)


class LevelJob(Base):
    """The attempt of a completed PR job that the level criteria count (SPEC §10).

    One entry per (backend, run, job name): the completed pull_request row with the
    highest `run_attempt`, with what it contributes. A later attempt replaces it, which
    is how attempt 1's contribution leaves the level rollups when attempt 2 completes.
    """

    __tablename__ = "hud_level_jobs"

    downstream_repo: Mapped[str] = mapped_column(String(200), primary_key=True)
    run_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    job_name: Mapped[str] = mapped_column(String(300), primary_key=True)
    run_attempt: Mapped[int] = mapped_column(Integer)
    job_key: Mapped[str] = mapped_column(String(64))
    day: Mapped[date] = mapped_column(Date)
    conclusion: Mapped[str | None] = mapped_column(String(30))
    queue_ms: Mapped[int | None] = mapped_column(BigInteger)
    execution_ms: Mapped[int | None] = mapped_column(BigInteger)
    started_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    completed_at: Mapped[datetime | None] = mapped_column(UtcDateTime)


class LevelDaily(Base):
    """Per (backend, day): counts and sums over the level jobs, for the rate criteria."""

    __tablename__ = "hud_level_daily"

    downstream_repo: Mapped[str] = mapped_column(String(200), primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    jobs: Mapped[int] = mapped_column(Integer, default=0)
    success: Mapped[int] = mapped_column(Integer, default=0)
    timed_out: Mapped[int] = mapped_column(Integer, default=0)
    overrun: Mapped[int] = mapped_column(Integer, default=0)
    queue_ms_sum: Mapped[int] = mapped_column(BigInteger, default=0)
    queue_n: Mapped[int] = mapped_column(Integer, default=0)


class LevelRun(Base):
    """A workflow run's end-to-end time over its level jobs, for the P50 criterion.

    `day` is the latest day among its jobs; `e2e_ms` (and its histogram bucket) is null
    while a start or a completion time is unknown. The index serves the exact median:
    the runs of one bucket in a window, in order of time.
    """

    __tablename__ = "hud_level_runs"

    downstream_repo: Mapped[str] = mapped_column(String(200), primary_key=True)
    run_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    day: Mapped[date] = mapped_column(Date)
    e2e_ms: Mapped[int | None] = mapped_column(BigInteger)
    e2e_bucket: Mapped[int | None] = mapped_column(SmallInteger)

    __table_args__ = (
        Index(
            "ix_hud_level_runs_repo_bucket_day_e2e",
            "downstream_repo",
            "e2e_bucket",
            "day",
            "e2e_ms",
        ),
    )


class LevelE2eBucket(Base):
    """How many runs per (backend, day) fall in each end-to-end time bucket.

    The median's rank is found in these O(days x buckets) counts; only the runs of the
    one bucket that holds it are then read, in order, for the exact value.
    """

    __tablename__ = "hud_level_e2e_buckets"

    downstream_repo: Mapped[str] = mapped_column(String(200), primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    bucket: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    count: Mapped[int] = mapped_column(Integer, default=0)


class LevelSeen(Base):
    """When a backend was first and last reported at a level: its level history."""

    __tablename__ = "hud_level_history"

    repo: Mapped[str] = mapped_column(String(200), primary_key=True)
    level: Mapped[str] = mapped_column(String(8), primary_key=True)
    first_seen_at: Mapped[datetime] = mapped_column(UtcDateTime)
    last_seen_at: Mapped[datetime] = mapped_column(UtcDateTime)


class PathSkip(Base):
    """A backend the relay did not dispatch a PR head to: it touches none of its paths
    (SPEC §15 `paths` / `paths_ignore`). The PR view says "skipped: no matching paths"."""

    __tablename__ = "hud_path_skips"

    upstream_repo: Mapped[str] = mapped_column(String(200), primary_key=True)
    pr_number: Mapped[int] = mapped_column(Integer, primary_key=True)
    head_sha: Mapped[str] = mapped_column(String(64), primary_key=True)
    downstream_repo: Mapped[str] = mapped_column(String(200), primary_key=True)
    delivery_id: Mapped[str] = mapped_column(String(200))
    skipped_at: Mapped[datetime] = mapped_column(UtcDateTime)

    __table_args__ = (Index("ix_hud_path_skips_pr", "pr_number"),)


# The tables themselves, for Core statements (the write path and the views use Core).
JOBS: Table = JobExecution.__table__  # type: ignore[assignment]
DAILY: Table = DailyRollup.__table__  # type: ignore[assignment]
BUCKETS: Table = LatencyBucket.__table__  # type: ignore[assignment]
BACKENDS: Table = Backend.__table__  # type: ignore[assignment]
COMMITS: Table = Commit.__table__  # type: ignore[assignment]
LEVEL_JOBS: Table = LevelJob.__table__  # type: ignore[assignment]
LEVEL_DAILY: Table = LevelDaily.__table__  # type: ignore[assignment]
LEVEL_RUNS: Table = LevelRun.__table__  # type: ignore[assignment]
LEVEL_E2E_BUCKETS: Table = LevelE2eBucket.__table__  # type: ignore[assignment]
LEVEL_HISTORY: Table = LevelSeen.__table__  # type: ignore[assignment]
PATH_SKIPS: Table = PathSkip.__table__  # type: ignore[assignment]


def fixed(value: str) -> ColumnElement[str]:
    """`value` written into the SQL as a literal, for `hud_jobs.event_type` and `status`.

    Those two columns appear in the partial indexes' conditions. SQLite, planning a query
    that compares either with a bound parameter, checks the parameter's value against
    the condition and so plans the statement again each time it is bound (~15 µs, twice
    a baseline seek's own cost). A literal is planned once. For names the code holds
    (event types, statuses), never for what a request says.
    """
    if not value.replace("_", "").isalnum():
        raise ValueError(f"not a name to write into SQL: {value!r}")
    return literal_column(f"'{value}'", String())


# A query uses a partial index only if its WHERE has the index's condition word for
# word, with literals: neither SQLite nor a PostgreSQL generic plan can tell that a
# bound parameter meets it. Redundant beside a query's own event filter, and needed.
ACTIVITY_ROWS = or_(JOBS.c.event_type != fixed("pull_request"), JOBS.c.status == fixed("completed"))
"""The rows of `ix_hud_jobs_repo_event_activity`: all but pull-request jobs still running."""
PUSH_ROWS = JOBS.c.event_type == fixed("push")
"""The rows of `ix_hud_jobs_baseline`: push results."""

"""Job rows, backends, daily rollups, distinct-PR rollups and latency histograms.

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
Utc = sa.DateTime(timezone=True)


def _counter(name: str, kind: type[sa.types.TypeEngine[int]] = sa.Integer) -> sa.Column[int]:
    return sa.Column(name, kind(), nullable=False, server_default="0")


def upgrade() -> None:
    op.create_table(
        "hud_jobs",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        sa.Column("job_key", sa.String(64), nullable=False, unique=True),
        sa.Column("downstream_repo", sa.String(200), nullable=False),
        sa.Column("downstream_repo_level", sa.String(8)),
        sa.Column("upstream_repo", sa.String(200), nullable=False),
        sa.Column("event_type", sa.String(40), nullable=False),
        sa.Column("pr_number", sa.Integer(), nullable=False),
        sa.Column("head_sha", sa.String(64), nullable=False),
        sa.Column("delivery_id", sa.String(200), nullable=False),
        sa.Column("workflow_name", sa.String(300), nullable=False),
        sa.Column("job_name", sa.String(300), nullable=False),
        sa.Column("run_id", sa.String(40), nullable=False),
        sa.Column("run_attempt", sa.Integer(), nullable=False),
        sa.Column("check_run_id", sa.String(40), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("conclusion", sa.String(30)),
        sa.Column("started_at", Utc),
        sa.Column("completed_at", Utc),
        sa.Column("queue_time", sa.Float()),
        sa.Column("execution_time", sa.Float()),
        sa.Column("duration", sa.Float()),
        sa.Column("passed", sa.Integer()),
        sa.Column("failed", sa.Integer()),
        sa.Column("skipped", sa.Integer()),
        sa.Column("total_tests", sa.Integer()),
        sa.Column("workflow_run_url", sa.Text()),
        sa.Column("artifact_url", sa.Text()),
        sa.Column("received_at", Utc, nullable=False),
        sa.Column("updated_at", Utc, nullable=False),
        sa.Column("activity_at", Utc, nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
    )
    op.create_index("ix_hud_jobs_repo_activity", "hud_jobs", ["downstream_repo", "activity_at"])
    op.create_index(
        "ix_hud_jobs_repo_event_activity",
        "hud_jobs",
        ["downstream_repo", "event_type", "activity_at"],
    )
    op.create_index("ix_hud_jobs_repo_sha", "hud_jobs", ["downstream_repo", "head_sha"])
    op.create_index("ix_hud_jobs_pr", "hud_jobs", ["pr_number"])
    op.create_index("ix_hud_jobs_day", "hud_jobs", ["day"])

    op.create_table(
        "hud_backends",
        sa.Column("repo", sa.String(200), primary_key=True),
        sa.Column("level", sa.String(8)),
        sa.Column("first_seen_at", Utc, nullable=False),
        sa.Column("last_run_at", Utc, nullable=False),
    )
    op.create_table(
        "hud_rollup_daily",
        sa.Column("downstream_repo", sa.String(200), primary_key=True),
        sa.Column("day", sa.Date(), primary_key=True),
        sa.Column("event_type", sa.String(40), primary_key=True),
        *(
            _counter(name)
            for name in (
                "jobs",
                "in_progress",
                "completed",
                "success",
                "failure",
                "cancelled",
                "timed_out",
                "skipped",
                "other",
            )
        ),
        _counter("queue_ms_sum", sa.BigInteger),
        _counter("queue_n"),
        _counter("execution_ms_sum", sa.BigInteger),
        _counter("execution_n"),
        _counter("duration_ms_sum", sa.BigInteger),
        _counter("duration_n"),
    )
    op.create_table(
        "hud_rollup_prs",
        sa.Column("downstream_repo", sa.String(200), primary_key=True),
        sa.Column("day", sa.Date(), primary_key=True),
        sa.Column("event_type", sa.String(40), primary_key=True),
        sa.Column("pr_number", sa.Integer(), primary_key=True),
        _counter("jobs"),
    )
    op.create_table(
        "hud_latency_buckets",
        sa.Column("downstream_repo", sa.String(200), primary_key=True),
        sa.Column("day", sa.Date(), primary_key=True),
        sa.Column("metric", sa.SmallInteger(), primary_key=True),
        sa.Column("bucket", sa.SmallInteger(), primary_key=True),
        _counter("count"),
    )


def downgrade() -> None:
    for table in (
        "hud_latency_buckets",
        "hud_rollup_prs",
        "hud_rollup_daily",
        "hud_backends",
        "hud_jobs",
    ):
        op.drop_table(table)

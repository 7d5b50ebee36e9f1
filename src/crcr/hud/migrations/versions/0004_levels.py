"""Level status (SPEC §10): counted jobs, per-day level sums, runs' end-to-end times, history.

Kept on write so that `GET /api/crcr/level-status` reads O(backends x days) rollup rows,
O(backends x days x buckets) histogram rows and one bucket's runs per backend for the
exact end-to-end median, at any number of job rows.
Existing job rows are counted into the new tables here.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from crcr.hud.levels.backfill import backfill_levels

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

Utc = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "hud_level_jobs",
        sa.Column("downstream_repo", sa.String(200), primary_key=True),
        sa.Column("run_id", sa.String(40), primary_key=True),
        sa.Column("job_name", sa.String(300), primary_key=True),
        sa.Column("run_attempt", sa.Integer(), nullable=False),
        sa.Column("job_key", sa.String(64), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("conclusion", sa.String(30)),
        sa.Column("queue_ms", sa.BigInteger()),
        sa.Column("execution_ms", sa.BigInteger()),
        sa.Column("started_at", Utc),
        sa.Column("completed_at", Utc),
    )
    op.create_table(
        "hud_level_daily",
        sa.Column("downstream_repo", sa.String(200), primary_key=True),
        sa.Column("day", sa.Date(), primary_key=True),
        *(
            sa.Column(name, kind, nullable=False, server_default="0")
            for name, kind in (
                ("jobs", sa.Integer()),
                ("success", sa.Integer()),
                ("timed_out", sa.Integer()),
                ("overrun", sa.Integer()),
                ("queue_ms_sum", sa.BigInteger()),
                ("queue_n", sa.Integer()),
            )
        ),
    )
    op.create_table(
        "hud_level_runs",
        sa.Column("downstream_repo", sa.String(200), primary_key=True),
        sa.Column("run_id", sa.String(40), primary_key=True),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("e2e_ms", sa.BigInteger()),
        sa.Column("e2e_bucket", sa.SmallInteger()),
    )
    op.create_index(
        "ix_hud_level_runs_repo_bucket_day_e2e",
        "hud_level_runs",
        ["downstream_repo", "e2e_bucket", "day", "e2e_ms"],
    )
    op.create_table(
        "hud_level_e2e_buckets",
        sa.Column("downstream_repo", sa.String(200), primary_key=True),
        sa.Column("day", sa.Date(), primary_key=True),
        sa.Column("bucket", sa.SmallInteger(), primary_key=True),
        sa.Column("count", sa.Integer(), nullable=False, server_default="0"),
    )
    op.create_table(
        "hud_level_history",
        sa.Column("repo", sa.String(200), primary_key=True),
        sa.Column("level", sa.String(8), primary_key=True),
        sa.Column("first_seen_at", Utc, nullable=False),
        sa.Column("last_seen_at", Utc, nullable=False),
    )
    backfill_levels(op.get_bind())


def downgrade() -> None:
    for table in (
        "hud_level_history",
        "hud_level_e2e_buckets",
        "hud_level_runs",
        "hud_level_daily",
        "hud_level_jobs",
    ):
        op.drop_table(table)

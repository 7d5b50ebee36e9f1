"""A superseded job's newer head on its row, and backends a PR head skipped by paths.

SPEC §15: a job whose PR got a newer head while it ran is `superseded`; its row keeps
the newer head's SHA in `superseded_by` and no pass rate counts it. Nullable: older rows
and every job never superseded keep null. `hud_path_skips` holds, per (PR head,
backend), that the relay skipped it by its `paths`/`paths_ignore` (the PR view says so).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("hud_jobs") as batch:
        batch.add_column(sa.Column("superseded_by", sa.String(64)))
    op.create_table(
        "hud_path_skips",
        sa.Column("upstream_repo", sa.String(200), primary_key=True),
        sa.Column("pr_number", sa.Integer, primary_key=True),
        sa.Column("head_sha", sa.String(64), primary_key=True),
        sa.Column("downstream_repo", sa.String(200), primary_key=True),
        sa.Column("delivery_id", sa.String(200), nullable=False),
        sa.Column("skipped_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_hud_path_skips_pr", "hud_path_skips", ["pr_number"])


def downgrade() -> None:
    op.drop_index("ix_hud_path_skips_pr", table_name="hud_path_skips")
    op.drop_table("hud_path_skips")
    with op.batch_alter_table("hud_jobs") as batch:
        batch.drop_column("superseded_by")

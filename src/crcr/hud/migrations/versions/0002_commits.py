"""Commits per backend, kept on write, for the backend page's newest-first listing.

Listing a page of commits by grouping every job row in the window cost ~260 ms per page
at 1 M rows on SQLite; the commits table answers from an index. The (repo, activity)
index on jobs served only that listing and goes.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "hud_commits",
        sa.Column("downstream_repo", sa.String(200), primary_key=True),
        sa.Column("pr_number", sa.Integer(), primary_key=True),
        sa.Column("head_sha", sa.String(64), primary_key=True),
        sa.Column("event_type", sa.String(40), nullable=False),
        sa.Column("jobs", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("last_activity_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index(
        "ix_hud_commits_repo_activity", "hud_commits", ["downstream_repo", "last_activity_at"]
    )
    op.create_index("ix_hud_commits_activity", "hud_commits", ["last_activity_at"])
    op.execute(
        "INSERT INTO hud_commits "
        "(downstream_repo, pr_number, head_sha, event_type, jobs, last_activity_at) "
        "SELECT downstream_repo, pr_number, head_sha, MAX(event_type), COUNT(*), "
        "MAX(activity_at) FROM hud_jobs GROUP BY downstream_repo, pr_number, head_sha"
    )
    op.drop_index("ix_hud_jobs_repo_activity", table_name="hud_jobs")


def downgrade() -> None:
    op.create_index("ix_hud_jobs_repo_activity", "hud_jobs", ["downstream_repo", "activity_at"])
    op.drop_table("hud_commits")

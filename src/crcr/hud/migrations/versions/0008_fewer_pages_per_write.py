"""Job writes keep no index or rollup that no query reads.

Every SQLite commit writes and fsyncs each page it dirtied, and each index or table a
job write touches costs about a page. The (backend, event type, activity) index serves
a backend's newest jobs of an event type (health, culprits, badges, the noise floor),
and none of those reads a pull-request job still running: such a row now enters it
once, as it completes, rather than when it starts and again each time its activity
moves. The baseline index only ever seeks push results: it holds push rows alone,
without its event type column. The per-day PR rollup has had no reader since the
backend page counted PRs from `hud_commits` (its downgrade rebuilds it from the rows).
docs/benchmarks.md has the WAL pages per report this saves.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

ACTIVITY_INDEX = "ix_hud_jobs_repo_event_activity"
BASELINE_INDEX = "ix_hud_jobs_baseline"
# Spelt out rather than imported: a migration keeps doing what it did when models change.
ACTIVITY_INDEXED = sa.text("event_type <> 'pull_request' OR status = 'completed'")
BASELINE_INDEXED = sa.text("event_type = 'push'")
# What the write path counted in the PR rollup: rows of a PR, superseded ones left out.
PR_ROLLUP = """
INSERT INTO hud_rollup_prs (downstream_repo, day, event_type, pr_number, jobs)
SELECT downstream_repo, day, event_type, pr_number, COUNT(*) FROM hud_jobs
WHERE pr_number > 0 AND superseded_by IS NULL
GROUP BY downstream_repo, day, event_type, pr_number
"""


def upgrade() -> None:
    op.drop_index(ACTIVITY_INDEX, table_name="hud_jobs")
    op.drop_index(BASELINE_INDEX, table_name="hud_jobs")
    op.create_index(
        ACTIVITY_INDEX,
        "hud_jobs",
        ["downstream_repo", "event_type", "activity_at"],
        sqlite_where=ACTIVITY_INDEXED,
        postgresql_where=ACTIVITY_INDEXED,
    )
    op.create_index(
        BASELINE_INDEX,
        "hud_jobs",
        ["downstream_repo", "workflow_name", "job_name", "activity_at"],
        sqlite_where=BASELINE_INDEXED,
        postgresql_where=BASELINE_INDEXED,
    )
    op.drop_table("hud_rollup_prs")


def downgrade() -> None:
    op.create_table(
        "hud_rollup_prs",
        sa.Column("downstream_repo", sa.String(200), primary_key=True),
        sa.Column("day", sa.Date(), primary_key=True),
        sa.Column("event_type", sa.String(40), primary_key=True),
        sa.Column("pr_number", sa.Integer(), primary_key=True),
        sa.Column("jobs", sa.Integer(), nullable=False, server_default="0"),
    )
    op.execute(PR_ROLLUP)
    op.drop_index(BASELINE_INDEX, table_name="hud_jobs")
    op.drop_index(ACTIVITY_INDEX, table_name="hud_jobs")
    op.create_index(
        BASELINE_INDEX,
        "hud_jobs",
        ["downstream_repo", "event_type", "workflow_name", "job_name", "activity_at"],
    )
    op.create_index(ACTIVITY_INDEX, "hud_jobs", ["downstream_repo", "event_type", "activity_at"])

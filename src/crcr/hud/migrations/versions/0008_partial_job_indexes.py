"""Two job indexes leave out the rows no query reads through them.

Every SQLite commit writes and fsyncs each page it dirtied, and each index a job row is
in takes about a page per write. The (backend, event type, activity) index serves a
backend's newest jobs of an event type (health, culprits, badges, the noise floor), and
none of those reads a pull-request job still running: such a row now enters it once,
as it completes, rather than when it starts and again each time its activity moves.
The baseline index only ever seeks push results: it holds push rows alone, without its
event type column. docs/benchmarks.md has the WAL pages per report this saves.

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


def downgrade() -> None:
    op.drop_index(BASELINE_INDEX, table_name="hud_jobs")
    op.drop_index(ACTIVITY_INDEX, table_name="hud_jobs")
    op.create_index(
        BASELINE_INDEX,
        "hud_jobs",
        ["downstream_repo", "event_type", "workflow_name", "job_name", "activity_at"],
    )
    op.create_index(ACTIVITY_INDEX, "hud_jobs", ["downstream_repo", "event_type", "activity_at"])

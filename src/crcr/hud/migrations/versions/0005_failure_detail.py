"""Failure detail on job rows (SPEC §11) and the index that finds a job's baseline result.

`failed_tests` and `triage_verdict` hold the downstream's claims as JSON text (bounded and
sanitised on ingest); `confirmed` and `github_conclusion` hold what the relay learnt from
GitHub. The index lets the baseline of one failed PR job be found with one index seek:
the latest push result of the same backend, workflow and job before a given time.

Revision ID: 0005
Revises: 0003
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"  # re-pointed to 0004_levels when levels-relay was merged into failures-relay
branch_labels = None
depends_on = None

BASELINE_INDEX = "ix_hud_jobs_baseline"


def upgrade() -> None:
    with op.batch_alter_table("hud_jobs") as batch:
        batch.add_column(sa.Column("failed_tests", sa.Text()))
        batch.add_column(sa.Column("triage_verdict", sa.Text()))
        batch.add_column(sa.Column("confirmed", sa.Boolean()))
        batch.add_column(sa.Column("github_conclusion", sa.String(30)))
    op.create_index(
        BASELINE_INDEX,
        "hud_jobs",
        ["downstream_repo", "event_type", "workflow_name", "job_name", "activity_at"],
    )


def downgrade() -> None:
    op.drop_index(BASELINE_INDEX, table_name="hud_jobs")
    with op.batch_alter_table("hud_jobs") as batch:
        for name in ("github_conclusion", "confirmed", "triage_verdict", "failed_tests"):
            batch.drop_column(name)

"""A job's expected conclusion (SPEC §13 `workflow.expected_conclusion`) on its row.

Relay health judges a canary's probe job by what it should conclude; a job may say so
explicitly instead of by its name (`xfail`, `xcancel`, `xtimeout`). Nullable: older rows
and every job that states nothing keep null.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("hud_jobs") as batch:
        batch.add_column(sa.Column("expected_conclusion", sa.String(30)))


def downgrade() -> None:
    with op.batch_alter_table("hud_jobs") as batch:
        batch.drop_column("expected_conclusion")

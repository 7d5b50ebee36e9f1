"""Alembic environment: runs on the connection `crcr.hud.db.migrate` hands over."""

from __future__ import annotations

from alembic import context

from crcr.hud.models import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through `crcr hud migrate` (crcr.hud.db.migrate)")

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()

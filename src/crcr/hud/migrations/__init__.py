"""Alembic migrations of the results store (applied by `crcr.hud.db.migrate`)."""

"""A PostgreSQL schema of one's own: tests and benchmarks that share a database never meet."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import create_engine, text


@contextmanager
def private_schema(base_url: str, label: str) -> Iterator[str]:
    """A results-store URL whose tables go to a new schema `crcr_<label>_…`, dropped after.

    The schema is chosen by the connection's `search_path`, so the code under test runs
    unchanged: it never names a schema.
    """
    schema = f"crcr_{label}_{uuid.uuid4().hex[:12]}"
    admin = create_engine(base_url)
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        yield f"{base_url}?options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()

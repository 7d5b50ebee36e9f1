"""Fixtures of the scale-out scenarios: a PostgreSQL schema and a Redis prefix of their own."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, text


@pytest.fixture
def postgres_schema_url(postgres_url: str) -> Iterator[str]:
    """A results-store URL on a private PostgreSQL schema, dropped afterwards."""
    schema = f"crcr_scaleout_{uuid.uuid4().hex[:12]}"
    engine = create_engine(postgres_url)
    with engine.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        yield f"{postgres_url}?options=-csearch_path%3D{schema}"
    finally:
        with engine.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        engine.dispose()

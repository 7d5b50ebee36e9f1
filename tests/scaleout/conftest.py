"""Fixtures of the scale-out scenarios: a PostgreSQL schema and a Redis prefix of their own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.postgres_schema import private_schema


@pytest.fixture
def postgres_schema_url(postgres_url: str) -> Iterator[str]:
    """A results-store URL on a private PostgreSQL schema, dropped afterwards."""
    with private_schema(postgres_url, "scaleout") as url:
        yield url

"""The recipes show how a scaled deployment names Redis and PostgreSQL, in forms crcr takes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.deploy.recipes import DEPLOY, known_variables

from crcr.config.settings import load_settings

UNITS = sorted((DEPLOY / "systemd").glob("*.service"))
SCALED = ("CRCR_REDIS_URL_FILE", "CRCR_DATABASE_URL_FILE")


def uncommented(unit: Path) -> list[tuple[str, str]]:
    """The unit's commented-out `Key=value` lines, as they read once uncommented."""
    found = re.findall(r"^#(LoadCredential|Environment)=(.+)$", unit.read_text(), re.MULTILINE)
    return [(key, value) for key, value in found]


@pytest.mark.parametrize("unit", UNITS, ids=lambda unit: unit.name)
def test_each_unit_carries_the_redis_and_postgresql_urls_as_credentials(unit: Path) -> None:
    lines = uncommented(unit)
    loaded = {value.partition(":")[0] for key, value in lines if key == "LoadCredential"}
    environment = dict(value.partition("=")[::2] for key, value in lines if key == "Environment")

    assert set(environment) == set(SCALED)
    assert set(environment) <= known_variables()
    assert {value.removeprefix("%d/") for value in environment.values()} == loaded


def test_the_env_example_shows_urls_crcr_accepts(tmp_path: Path) -> None:
    text = (DEPLOY / "crcr.env.example").read_text()
    urls = dict(re.findall(r"^# (CRCR_(?:REDIS|DATABASE)_URL)=(\S+)$", text, re.MULTILINE))

    assert set(urls) == {"CRCR_REDIS_URL", "CRCR_DATABASE_URL"}
    settings = load_settings(
        data_dir=tmp_path, redis_url=urls["CRCR_REDIS_URL"], database_url=urls["CRCR_DATABASE_URL"]
    )
    assert settings.redis_url == urls["CRCR_REDIS_URL"]
    assert settings.hud_database_url.startswith("postgresql://")

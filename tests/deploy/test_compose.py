"""The compose file in deploy/: two relays, a sweeper, Redis and PostgreSQL, whose crcr
commands, settings and secrets all exist."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.deploy.recipes import DEPLOY, parse_crcr, unknown_variables

COMPOSE = DEPLOY / "compose.yaml"


def _compose() -> dict[str, Any]:
    loaded = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(loaded, dict)
    return loaded


def _crcr_services() -> dict[str, dict[str, Any]]:
    services = _compose()["services"]
    return {name: spec for name, spec in services.items() if spec.get("image") == "crcr:local"}


def test_it_runs_two_relays_and_a_sweeper_beside_redis_and_postgres() -> None:
    services = _compose()["services"]
    commands = sorted(" ".join(spec["command"]) for spec in _crcr_services().values())

    assert commands == ["serve", "serve", "sweep --loop"]
    assert {"redis", "postgres"} <= set(services)


@pytest.mark.parametrize("name", ["relay-1", "relay-2", "sweeper"])
def test_each_crcr_service_runs_a_command_that_exists(name: str) -> None:
    parse_crcr(_crcr_services()[name]["command"])


@pytest.mark.parametrize("name", ["relay-1", "relay-2", "sweeper"])
def test_each_crcr_service_sets_only_variables_crcr_reads(name: str) -> None:
    spec = _crcr_services()[name]
    example = DEPLOY / "crcr.env.example"
    from_file = [line.partition("=")[0] for line in example.read_text().splitlines() if "=" in line]

    assert spec["env_file"] == "crcr.env"
    assert unknown_variables([*spec["environment"], *from_file]) == []


@pytest.mark.parametrize("name", ["relay-1", "relay-2", "sweeper"])
def test_secrets_are_files_the_service_mounts(name: str) -> None:
    spec = _crcr_services()[name]
    declared = set(_compose()["secrets"])
    mounted = set(spec["secrets"])
    named = {
        Path(value).name
        for variable, value in spec["environment"].items()
        if variable.endswith("_FILE")
    }

    assert named and named <= mounted <= declared
    assert all(
        value.startswith("/run/secrets/")
        for variable, value in spec["environment"].items()
        if variable.endswith("_FILE")
    )


def test_relays_wait_for_healthy_stores_and_publish_the_images_port() -> None:
    for name in ("relay-1", "relay-2"):
        spec = _crcr_services()[name]
        assert spec["depends_on"] == {
            "redis": {"condition": "service_healthy"},
            "postgres": {"condition": "service_healthy"},
        }
        (published,) = spec["ports"]
        assert published.startswith("127.0.0.1:") and published.endswith(":8000")
    services = _compose()["services"]
    assert "healthcheck" in services["redis"] and "healthcheck" in services["postgres"]

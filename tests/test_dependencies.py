"""What crcr imports is what it declares, at versions past the known advisories."""

from __future__ import annotations

import ast
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
CORE = {canonicalize_name(Requirement(r).name): Requirement(r) for r in PROJECT["dependencies"]}
EXTRAS = PROJECT["optional-dependencies"]

# (distribution, the first version without the advisory)
ADVISORY_FLOORS = [
    ("starlette", "0.49.1"),  # CVE-2025-62727 (and CVE-2024-47874, CVE-2025-54121 before it)
    ("h11", "0.16.0"),  # CVE-2025-43859, reached through uvicorn and httpx
    ("jinja2", "3.1.6"),  # CVE-2025-27516 (and CVE-2024-56201, CVE-2024-56326)
    ("cryptography", "44.0.1"),  # CVE-2024-12797
    ("pyjwt", "2.10.1"),  # CVE-2024-53861
]


def imported_top_level_modules() -> set[str]:
    modules: set[str] = set()
    for path in (ROOT / "src" / "crcr").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules.update(alias.name.partition(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.partition(".")[0])
    return modules - set(sys.stdlib_module_names) - {"crcr", "__future__"}


def test_every_third_party_import_is_a_declared_dependency() -> None:
    distributions = packages_distributions()
    undeclared = {
        module: distributions.get(module)
        for module in imported_top_level_modules()
        if not any(canonicalize_name(d) in CORE for d in distributions.get(module, []))
    }
    assert undeclared == {}


def test_the_postgresql_driver_is_an_extra_not_a_core_dependency() -> None:
    assert "psycopg" not in CORE
    assert any(Requirement(r).name == "psycopg" for r in EXTRAS["postgres"])


@pytest.mark.parametrize(("name", "fixed"), ADVISORY_FLOORS)
def test_floors_sit_past_known_advisories(name: str, fixed: str) -> None:
    requirement = CORE[name]
    floors = [Version(spec.version) for spec in requirement.specifier if spec.operator == ">="]
    assert floors and floors[0] >= Version(fixed), f"{name} floor {floors} < {fixed}"

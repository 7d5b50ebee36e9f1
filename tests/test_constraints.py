"""constraints.txt, the versions a deployment installs, stays within what pyproject allows.

It is refreshed by `make constraints` (uv pip compile); a floor raised or a dependency
added without refreshing it fails here, naming the dependency.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
DEPLOYED = [*PROJECT["dependencies"], *PROJECT["optional-dependencies"]["postgres"]]


def pinned() -> dict[str, Version]:
    """Each `name==version` line of constraints.txt (markers and comments left out)."""
    versions: dict[str, Version] = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        requirement = line.partition("#")[0].strip()
        if not requirement:
            continue
        parsed = Requirement(requirement)
        (spec,) = parsed.specifier
        assert spec.operator == "==", f"not an exact pin: {line!r}"
        versions[canonicalize_name(parsed.name)] = Version(spec.version)
    return versions


def test_every_direct_dependency_is_pinned_within_its_range() -> None:
    versions = pinned()
    problems = []
    for text in DEPLOYED:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        if name not in versions:
            problems.append(f"{name}: missing")
        elif versions[name] not in requirement.specifier:
            problems.append(f"{name}: {versions[name]} outside {requirement.specifier}")
    assert problems == [], "run `make constraints`: " + "; ".join(problems)


def test_the_extras_of_direct_dependencies_are_pinned_too() -> None:
    """`uvicorn[standard]`, `redis[hiredis]`, `PyJWT[crypto]`, `psycopg[binary]` bring more."""
    versions = pinned()
    for expected in ("uvloop", "httptools", "hiredis", "cryptography", "psycopg-binary"):
        assert expected in versions

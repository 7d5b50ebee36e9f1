"""The package's metadata: its licence file, where it lives, what it is for."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from crcr.init.workflow import HOME_REPOSITORY

ROOT = Path(__file__).parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_the_licence_the_metadata_names_is_shipped() -> None:
    assert PROJECT["license"] == "BSD-3-Clause"
    assert PROJECT["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("BSD 3-Clause License")
    assert "Neither the name of the copyright holder" in text  # the third clause


def test_the_project_says_where_it_lives() -> None:
    urls = PROJECT["urls"]
    assert {"Homepage", "Source", "Issues", "Documentation"} <= set(urls)
    # One home: the report action's reference (crcr init downstream) names it too.
    assert urls["Source"] == f"https://github.com/{HOME_REPOSITORY}"


def test_the_classifiers_match_the_python_versions_and_carry_no_licence() -> None:
    classifiers = PROJECT["classifiers"]
    floor = re.fullmatch(r">=3\.(\d+)", PROJECT["requires-python"])
    assert floor is not None
    versions = {int(c.rsplit(".", 1)[1]) for c in classifiers if re.search(r":: 3\.\d+$", c)}
    assert min(versions) == int(floor.group(1))
    assert "Typing :: Typed" in classifiers and (ROOT / "src/crcr/py.typed").exists()
    assert not [c for c in classifiers if c.startswith("License ::")]  # PEP 639: the expression

"""The Makefile: `make demo` installs the runtime alone, `make test` everything."""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[1]


def planned(target: str, tmp_path: Path) -> str:
    """The commands `make TARGET` would run from a fresh clone (no venv yet), not run.

    Run as a make of its own: under `make test` the parent's MAKEFLAGS and MAKELEVEL
    would make it a sub-make, which prints "Entering directory" lines around the plan.
    """
    alone = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    done = subprocess.run(
        ["make", "--dry-run", "--always-make", target, f"VENV={tmp_path / 'venv'}"],
        cwd=ROOT,
        env=alone,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def test_the_demo_installs_the_runtime_only(tmp_path: Path) -> None:
    commands = planned("demo", tmp_path)

    assert "uv pip install" in commands
    assert "-e '.'" in commands
    assert "[dev]" not in commands
    assert "npm" not in commands
    assert commands.rstrip().endswith("crcr demo")


def test_the_tests_install_the_dev_extra_and_node_packages(tmp_path: Path) -> None:
    commands = planned("test", tmp_path)

    assert "-e '.[dev]'" in commands
    assert "npm ci" in commands


def test_uv_falls_back_to_pip(tmp_path: Path) -> None:
    commands = planned("demo", tmp_path)

    assert re.search(r"else .*ensurepip.*-m pip install --quiet -e '\.'", commands)


def test_the_makefile_fetches_the_uv_the_dev_extra_pins() -> None:
    dev = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    pinned = next(spec for spec in dev["dev"] if spec.startswith("uv=="))
    make_pin = re.search(r"^UV_VERSION := (\S+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)

    assert make_pin is not None
    assert pinned == f"uv=={make_pin.group(1)}"

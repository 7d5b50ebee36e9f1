"""The reporter runs on a bare runner: standard library only, Python 3.9 or newer (SPEC §8).

The composite action puts the action's checkout on `sys.path` and runs
`crcr.reporter.standalone` with whatever `python3` the runner has, so nothing it can
import may come from outside the standard library. The one crcr package it reaches
beyond its own is `crcr.failure_detail`: the bounds on failed tests and triage verdicts
that the relay and the HUD apply too, kept in one place (and held to the same rules here).
`crcr.reporter.cli` is the Typer front end of the installed `crcr report`, not part of
what the action runs.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).parents[2] / "src"
ENTRY_POINTS = ("crcr.reporter.standalone", "crcr.reporter.__main__")
ALLOWED_CRCR = ("crcr.reporter", "crcr.failure_detail")
TYPER_FRONT_END = "crcr.reporter.cli"


def module_file(name: str) -> Path:
    base = SRC.joinpath(*name.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def imports_of(name: str) -> set[str]:
    """Every module `name` imports, wherever in the file (functions included)."""
    tree = ast.parse(module_file(name).read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            # `from crcr.reporter import cli` names a module, not an attribute.
            for alias in node.names:
                if module_file(f"{node.module}.{alias.name}").exists():
                    found.add(f"{node.module}.{alias.name}")
    return found


def with_parents(name: str) -> list[str]:
    """Importing a.b.c runs a/__init__ and a/b/__init__ first."""
    parts = name.split(".")
    return [".".join(parts[: index + 1]) for index in range(len(parts))]


def reachable_modules() -> dict[str, set[str]]:
    """crcr modules the action can import, from every reporter module, with their imports."""
    reporter_modules = [
        f"crcr.reporter.{path.stem}"
        for path in (SRC / "crcr" / "reporter").glob("*.py")
        if path.stem != "__init__"
    ]
    pending = [m for m in [*ENTRY_POINTS, *reporter_modules] if m != TYPER_FRONT_END]
    seen: dict[str, set[str]] = {}
    while pending:
        for name in with_parents(pending.pop()):
            if name in seen or not module_file(name).exists():
                continue
            seen[name] = imports_of(name)
            pending.extend(i for i in seen[name] if i.split(".")[0] == "crcr")
    return seen


def test_the_reporter_imports_only_the_standard_library_and_itself() -> None:
    modules = reachable_modules()
    assert "crcr.reporter.standalone" in modules and "crcr.reporter.transport" in modules
    outside: list[str] = []
    for module, imported in sorted(modules.items()):
        for name in sorted(imported):
            top = name.split(".")[0]
            if top == "crcr":
                ok = name == "crcr" or name.startswith(ALLOWED_CRCR)
                ok = ok and name != TYPER_FRONT_END
            else:
                ok = top in sys.stdlib_module_names or top == "__future__"
            if not ok:
                outside.append(f"{module} imports {name}")
    assert outside == []


def test_the_entry_point_loads_with_site_packages_out_of_reach() -> None:
    # -I: no PYTHONPATH, no user site; -S: no site-packages at all. Only src/ and stdlib.
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); "
        "import crcr.reporter.standalone, crcr.reporter.report; "
        "print('\\n'.join(sorted(sys.modules)))"
    )
    loaded = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, str(SRC)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    third_party = [
        name
        for name in loaded
        if name.split(".")[0] not in sys.stdlib_module_names
        and not name.startswith(("crcr", "__main__", "_"))
    ]
    assert third_party == []
    assert TYPER_FRONT_END not in loaded


def test_vermin_finds_nothing_that_needs_a_python_newer_than_3_9() -> None:
    vermin = shutil.which("vermin", path=str(Path(sys.executable).parent))
    if vermin is None:
        pytest.fail("vermin is not installed (it is in the dev extras: make install)")
    checked = [str(SRC / "crcr" / "reporter"), str(SRC / "crcr" / "failure_detail")]
    result = subprocess.run(
        [vermin, "-t=3.9-", "--no-tips", "--violations", "--no-make-paths-absolute", *checked],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr

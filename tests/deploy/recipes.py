"""What the deployment recipes under deploy/ may name: crcr's commands and settings.

The recipes cannot be run as they are here (no container engine, no systemd as PID 1),
so the tests hold every command line, variable and path in them against crcr itself.
"""

from __future__ import annotations

import functools
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import typer

from crcr.config.secret_files import SECRET_SETTINGS
from crcr.config.settings import Settings

REPOSITORY = Path(__file__).resolve().parents[2]
DEPLOY = REPOSITORY / "deploy"


def known_variables() -> frozenset[str]:
    """Every `CRCR_*` variable crcr reads, `_FILE` forms of secrets included."""
    plain = {f"CRCR_{name.upper()}" for name in Settings.model_fields}
    files = {f"CRCR_{name.upper()}_FILE" for name in SECRET_SETTINGS}
    return frozenset(plain | files)


def unknown_variables(names: Iterable[str]) -> list[str]:
    """The `CRCR_*` names among `names` that crcr does not read (a typo, or a stale recipe)."""
    known = known_variables()
    return sorted(name for name in names if name.startswith("CRCR_") and name not in known)


@functools.cache
def crcr_command() -> Any:
    """The `crcr` command tree, every component's commands attached (Typer's own Click)."""
    from crcr import cli

    cli._register_component_commands()
    return typer.main.get_command(cli.app)


def parse_crcr(argv: Sequence[str]) -> Any:
    """Parse a `crcr …` argument list as the CLI would: raises if it names a command or an
    option that does not exist, or gives an option a value it refuses."""
    command = crcr_command()
    words = list(argv)
    path = ["crcr"]
    while hasattr(command, "commands"):
        if not words or words[0] not in command.commands:
            raise LookupError(f"no such command: {' '.join([*path, *words[:1]])}")
        name = words.pop(0)
        command = command.commands[name]
        path.append(name)
    return command.make_context(" ".join(path), words)


def exec_words(line: str) -> list[str]:
    """A shell-free command line (systemd `ExecStart=`) as words."""
    return shlex.split(line)


def unit_entries(path: Path) -> list[tuple[str, str, str]]:
    """A systemd unit as (section, key, value) triples, repeated keys kept in order."""
    entries: list[tuple[str, str, str]] = []
    section = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        key, _, value = line.partition("=")
        entries.append((section, key.strip(), value.strip()))
    return entries

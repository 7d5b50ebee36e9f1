"""docs/try-it-by-hand.md keeps up with the CLI: every command it shows parses as written."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer

from crcr import cli as crcr_cli

GUIDE = Path(__file__).parents[2] / "docs" / "try-it-by-hand.md"
SHELL_BLOCK = re.compile(r"^```sh\n(.*?)^```", flags=re.MULTILINE | re.DOTALL)
# A `crcr …` invocation, up to where the shell takes over again.
INVOCATION = re.compile(r"(?:^|[\s(])crcr ([^|)\n;#]*)")


def invocations() -> list[str]:
    blocks = SHELL_BLOCK.findall(GUIDE.read_text())
    lines = "\n".join(blocks).replace("\\\n", " ")
    return [match.strip().rstrip('"') for match in INVOCATION.findall(lines)]


def test_the_guide_shows_both_sides() -> None:
    shown = " ".join(invocations())
    for command in ("sandbox webhook", "sandbox token", "sandbox dispatches", "report", "serve"):
        assert f"{command} " in f"{shown} " or shown.endswith(command), command


@pytest.mark.parametrize("line", invocations())
def test_every_command_in_the_guide_parses(line: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRCR_WEBHOOK_SECRET", "try-it")
    crcr_cli._register_component_commands()
    # Typer builds on a click of its own: groups are known by their `commands` mapping.
    command: Any = typer.main.get_command(crcr_cli.app)
    words = shlex.split(line)
    while getattr(command, "commands", None) and words and words[0] in command.commands:
        command = command.commands[words.pop(0)]
    if getattr(command, "commands", None) and words:
        assert command.invoke_without_command, f"no such command: crcr {line}"

    command.make_context("crcr", list(words))  # raises on an unknown option or a bad value

"""Command-line commands contributed by the reporter component."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this component's commands to the CLI (none yet)."""

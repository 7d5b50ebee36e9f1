"""Settings for a command: loaded, or one line naming the problem and exit 2; and the
console a command prints its tables on.

Its own module so that every component's commands can use it without importing the
root command line (`crcr.cli`), which imports them to register their commands.
"""

from __future__ import annotations

import os
import sys
from importlib.util import find_spec
from typing import TYPE_CHECKING, TextIO

import typer

from crcr.config.settings import Settings, SettingsError, load_settings

if TYPE_CHECKING:
    from rich.console import Console

PIPE_WIDTH = 10_000
"""Columns a table may take when printed into a pipe: as many as its content needs."""

POSTGRES_SCHEMES = ("postgresql:", "postgresql+psycopg:", "postgres:")
POSTGRES_DRIVER_MISSING = (
    "CRCR_DATABASE_URL: PostgreSQL needs its driver: pip install 'crcr[postgres]'"
)


def check_drivers(settings: Settings) -> None:
    """Raise `SettingsError` when a URL names a store whose driver is not installed.

    PostgreSQL's driver is an extra (the embedded install stays small), so a
    `postgresql://` URL on a plain install is an operator's first-hour mistake: found
    here it is one line naming the fix, where the results store's first connection
    would otherwise fail inside the server's start-up as a traceback.
    """
    url = settings.hud_database_url.lower()
    if url.startswith(POSTGRES_SCHEMES) and find_spec("psycopg") is None:
        raise SettingsError(POSTGRES_DRIVER_MISSING)


def settings_or_exit(**overrides: object) -> Settings:
    """Load settings, or print the one-line problem and exit 2."""
    try:
        settings = load_settings(**overrides)
        check_drivers(settings)
    except SettingsError as exc:
        typer.echo(f"crcr: {exc}", err=True)
        raise typer.Exit(2) from None
    return settings


def output_console(file: TextIO | None = None) -> Console:
    """The rich console a command prints a table on (`crcr audit`, `crcr levels status`).

    `NO_COLOR` (no-color.org) means no escape codes at all: rich drops only the colours
    for it and keeps bold and dim, so the colour system is switched off instead. Into a
    pipe rich assumes 80 columns and cuts every cell of a wide table to a few
    characters; a pipe has no width, so there each row takes the columns its content
    needs (`COLUMNS` still wins when set).
    """
    from rich.console import Console

    stream = file if file is not None else sys.stdout
    no_color = bool(os.environ.get("NO_COLOR"))
    piped = not stream.isatty() and "COLUMNS" not in os.environ
    return Console(
        file=stream,
        color_system=None if no_color else "auto",
        width=PIPE_WIDTH if piped else None,
        soft_wrap=False,
    )

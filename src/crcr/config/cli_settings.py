"""Settings for a command: loaded, or one line naming the problem and exit 2.

Its own module so that every component's commands can use it without importing the
root command line (`crcr.cli`), which imports them to register their commands.
"""

from __future__ import annotations

import typer

from crcr.config.settings import Settings, SettingsError, load_settings


def settings_or_exit(**overrides: object) -> Settings:
    """Load settings, or print the one-line problem and exit 2."""
    try:
        return load_settings(**overrides)
    except SettingsError as exc:
        typer.echo(f"crcr: {exc}", err=True)
        raise typer.Exit(2) from None

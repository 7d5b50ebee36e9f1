"""Settings for a command: loaded, or one line naming the problem and exit 2.

Its own module so that every component's commands can use it without importing the
root command line (`crcr.cli`), which imports them to register their commands.
"""

from __future__ import annotations

from importlib.util import find_spec

import typer

from crcr.config.settings import Settings, SettingsError, load_settings

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

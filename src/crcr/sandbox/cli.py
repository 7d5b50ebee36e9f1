"""`crcr sandbox`: run the GitHub stand-in as a server."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the `sandbox` command to the CLI."""

    @app.command()
    def sandbox(
        host: str = typer.Option("127.0.0.1", help="Interface to bind."),
        port: int = typer.Option(9000, help="TCP port to listen on."),
    ) -> None:
        """Run the offline GitHub stand-in (REST subset, OIDC issuer)."""
        raise typer.Exit(1)

"""`crcr sandbox`: run the GitHub stand-in as a server."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    """Add the `sandbox` command to the CLI."""

    @app.command()
    def sandbox(
        host: str = typer.Option("127.0.0.1", help="Interface to bind."),
        port: int = typer.Option(9000, help="TCP port to listen on (0: any free port)."),
        key_file: str = typer.Option(
            "./crcr-data/sandbox-app-key.pem",
            help="Where to write the generated App private key (PEM).",
        ),
        install: list[str] = typer.Option(  # noqa: B008
            [], help="Install the App on this owner/repo (repeatable)."
        ),
        api_prefix: str = typer.Option(
            "", help="Serve the REST API under a prefix, e.g. /api/v3 like GitHub Enterprise."
        ),
    ) -> None:
        """Run the offline GitHub stand-in (REST subset, OIDC issuer)."""
        from crcr.sandbox.serve import build_server, serve

        try:
            server = build_server(
                host, port, Path(key_file), installed_repos=install, api_prefix=api_prefix
            )
        except (OSError, ValueError) as exc:
            typer.echo(f"crcr sandbox: {exc}", err=True)
            raise typer.Exit(2) from None
        for line in server.banner():
            typer.echo(line)
        serve(server)

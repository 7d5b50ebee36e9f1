"""Command-line commands contributed by the hud component: `crcr hud serve|migrate|purge`."""

from __future__ import annotations

import typer

hud_app = typer.Typer(help="The HUD: results store and dashboard.", no_args_is_help=True)


@hud_app.command()
def migrate() -> None:
    """Apply the results store's migrations (CRCR_DATABASE_URL, or SQLite in the data dir)."""
    from crcr.config.cli_settings import settings_or_exit
    from crcr.hud.db import create_results_engine
    from crcr.hud.db import migrate as apply_migrations
    from crcr.ops.versions import refusing_newer_data

    settings = settings_or_exit()
    engine = create_results_engine(settings.hud_database_url)
    try:
        with refusing_newer_data("crcr hud migrate"):
            apply_migrations(engine)
    finally:
        engine.dispose()
    typer.echo("crcr hud: results store is at the newest migration")


@hud_app.command()
def purge() -> None:
    """Delete results older than CRCR_HUD_RETENTION_DAYS."""
    from datetime import UTC, datetime, timedelta

    from crcr.config.cli_settings import settings_or_exit
    from crcr.hud.db import create_results_engine
    from crcr.hud.write.writer import purge_older_than

    settings = settings_or_exit()
    engine = create_results_engine(settings.hud_database_url)
    cutoff = datetime.now(UTC).date() - timedelta(days=settings.hud_retention_days - 1)
    try:
        deleted = purge_older_than(engine, cutoff)
    finally:
        engine.dispose()
    typer.echo(f"crcr hud: deleted {deleted} job rows from before {cutoff}")


@hud_app.command()
def serve(
    host: str = typer.Option("127.0.0.1", envvar="CRCR_HOST", help="Interface to bind."),
    port: int = typer.Option(8001, envvar="CRCR_PORT", help="TCP port to listen on."),
    ssl_certfile: str | None = typer.Option(
        None, envvar="CRCR_SSL_CERTFILE", help="Serve HTTPS with this certificate."
    ),
    ssl_keyfile: str | None = typer.Option(
        None, envvar="CRCR_SSL_KEYFILE", help="The certificate's private key."
    ),
    access_log: bool = typer.Option(
        True, envvar="CRCR_ACCESS_LOG", help="Log one line per request."
    ),
) -> None:
    """Run the HUD alone (ingestion API, JSON API), without the relay."""
    import uvicorn

    from crcr.config.cli_settings import settings_or_exit
    from crcr.config.logging_setup import uvicorn_log_config
    from crcr.hud.component import create_hud_app

    settings = settings_or_exit()
    if settings.hud_token is None:
        typer.echo("crcr hud serve: CRCR_HUD_TOKEN is unset; ingestion will refuse every body")
    if (ssl_certfile is None) != (ssl_keyfile is None):
        typer.echo("crcr hud serve: --ssl-certfile and --ssl-keyfile go together", err=True)
        raise typer.Exit(2)
    from crcr.ops.versions import check_stores, refusing_newer_data

    with refusing_newer_data("crcr hud serve"):
        check_stores(settings, state=False)
    uvicorn.run(
        create_hud_app(settings),
        host=host,
        port=port,
        log_config=uvicorn_log_config(access_log=access_log),
        access_log=False,  # crcr.web.access_log writes it, with the duration
        ssl_certfile=ssl_certfile,
        ssl_keyfile=ssl_keyfile,
    )


def register(app: typer.Typer) -> None:
    """Add `crcr hud …` to the CLI."""
    app.add_typer(hud_app, name="hud")

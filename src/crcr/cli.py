"""The `crcr` command line: composes each component's commands."""

from __future__ import annotations

import sys

import typer

from crcr.cli_settings import settings_or_exit

app = typer.Typer(
    name="crcr",
    help="Cross-Repository CI Relay: relay upstream GitHub events to downstream CI.",
    no_args_is_help=True,
    add_completion=False,
)


@app.command()
def version() -> None:
    """Print the crcr version, and the schema versions of this code and of the stored data."""
    from crcr.settings import SettingsError, load_settings
    from crcr.versions import describe_versions

    try:
        settings = load_settings()
    except SettingsError as exc:
        typer.echo(describe_versions())
        typer.echo(f"crcr: stored data not read: {exc}", err=True)
        return
    typer.echo(describe_versions(settings))


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", help="Interface to bind."),
    port: int = typer.Option(8000, help="TCP port to listen on."),
    workers: int = typer.Option(1, min=1, help="Worker processes."),
    access_log: bool = typer.Option(
        True, help="Log every request (about a tenth of the CPU of a callback)."
    ),
) -> None:
    """Run the relay and the HUD (settings from CRCR_* variables)."""
    import uvicorn

    from crcr.metrics_exposition import metrics_shared_by_workers

    settings = settings_or_exit()
    missing = settings.missing_for_serving()
    if missing:
        typer.echo(f"crcr serve: missing required settings: {', '.join(missing)}", err=True)
        raise typer.Exit(2)
    from crcr.versions import check_stores, refusing_newer_data

    with refusing_newer_data("crcr serve"):
        check_stores(settings)
    with metrics_shared_by_workers(workers):
        uvicorn.run(
            "crcr.app:create_app_from_environment",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            log_level="info",
            access_log=access_log,
        )


def main() -> None:
    """Console-script entry point."""
    _register_component_commands()
    app(prog_name="crcr")


def _register_component_commands() -> None:
    """Attach the commands each component contributes (kept out of this module)."""
    from crcr.demo import cli as demo_cli
    from crcr.hud import cli as hud_cli
    from crcr.hud.levels import cli as levels_cli
    from crcr.init import cli as init_cli
    from crcr.relay.allowlist import cli as allowlist_cli
    from crcr.relay.levels.cli import add_sync_command
    from crcr.relay.sweeper import cli as sweep_cli
    from crcr.reporter import cli as reporter_cli
    from crcr.sandbox import cli as sandbox_cli

    components = (
        allowlist_cli,
        sweep_cli,
        hud_cli,
        levels_cli,
        reporter_cli,
        sandbox_cli,
        demo_cli,
        init_cli,
    )
    # `crcr levels` is the HUD's group (`status`); the relay adds `sync` to it.
    add_sync_command(levels_cli.levels_app)
    for component in components:
        component.register(app)


if __name__ == "__main__":
    main()
    sys.exit(0)

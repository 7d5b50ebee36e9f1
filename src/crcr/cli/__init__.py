"""The `crcr` command line: composes each component's commands."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable

import typer

from crcr.cli.settings_help import serve_help
from crcr.config.cli_settings import check_drivers, settings_or_exit
from crcr.config.logging_setup import (
    LOG_FORMATS,
    LOG_LEVELS,
    configure_logging,
    requested_format,
    route_stderr_as_json,
)

app = typer.Typer(
    name="crcr",
    help="Cross-Repository CI Relay: relay upstream GitHub events to downstream CI.",
    no_args_is_help=True,
    add_completion=False,
)


def version_text() -> str:
    """What `crcr version` and `crcr --version` print: the package version and the schema
    versions of this code and, where the settings name them, of the stored data."""
    from crcr.config.settings import SettingsError, load_settings
    from crcr.ops.versions import describe_versions

    try:
        settings = load_settings()
        check_drivers(settings)
    except SettingsError as exc:
        typer.echo(f"crcr: stored data not read: {exc}", err=True)
        return describe_versions()
    return describe_versions(settings)


@app.command()
def version() -> None:
    """Print the crcr version, and the schema versions of this code and of the stored data."""
    typer.echo(version_text())


def _print_version(wanted: bool) -> None:
    if wanted:
        typer.echo(version_text())
        raise typer.Exit()


def _one_of(choices: tuple[str, ...]) -> Callable[[str | None], str | None]:
    def check(value: str | None) -> str | None:
        if value is not None and value.lower() not in choices:
            raise typer.BadParameter(f"{value!r} is not one of {', '.join(choices)}")
        return value.lower() if value else value

    return check


@app.callback()
def _root(
    log_level: str = typer.Option(
        "info",
        envvar="CRCR_LOG_LEVEL",
        callback=_one_of(LOG_LEVELS),
        help=f"Least severe log level shown: {', '.join(LOG_LEVELS)}.",
    ),
    log_format: str | None = typer.Option(
        None,
        envvar="CRCR_LOG_FORMAT",
        callback=_one_of(LOG_FORMATS),
        help="Log lines as json or text  [default: text on a terminal, else json]",
    ),
    _version: bool = typer.Option(
        False,
        "--version",
        is_eager=True,
        callback=_print_version,
        help="Print the version (as `crcr version`) and exit.",
    ),
) -> None:
    """Cross-Repository CI Relay: relay upstream GitHub events to downstream CI."""
    configure_logging(log_level, log_format)


@app.command(help=serve_help())
def serve(
    host: str = typer.Option("127.0.0.1", envvar="CRCR_HOST", help="Interface to bind."),
    port: int = typer.Option(8000, envvar="CRCR_PORT", help="TCP port to listen on."),
    workers: int = typer.Option(1, min=1, envvar="CRCR_WORKERS", help="Worker processes."),
    access_log: bool = typer.Option(
        True,
        envvar="CRCR_ACCESS_LOG",
        help="Log every request (about a tenth of the CPU of a callback).",
    ),
) -> None:
    import uvicorn

    from crcr.config.logging_setup import uvicorn_log_config
    from crcr.ops.metrics_exposition import metrics_shared_by_workers
    from crcr.ops.shutdown import exit_zero_on_sigterm

    settings = settings_or_exit()
    missing = settings.missing_for_serving()
    if missing:
        typer.echo(f"crcr serve: missing required settings: {', '.join(missing)}", err=True)
        raise typer.Exit(2)
    from crcr.ops.versions import check_stores, refusing_newer_data

    with refusing_newer_data("crcr serve"):
        check_stores(settings)
    exit_zero_on_sigterm()
    with metrics_shared_by_workers(workers):
        uvicorn.run(
            "crcr.app:create_app_from_environment",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            log_config=uvicorn_log_config(access_log=access_log),
            access_log=False,  # crcr.web.access_log writes it, with the duration
            # SIGTERM: stop accepting, let requests in flight finish (this long at most),
            # then the lifespan's shutdown stops the sweeper and gives its lock up.
            timeout_graceful_shutdown=settings.shutdown_grace,
        )


def main() -> None:
    """Console-script entry point.

    In JSON log mode (asked for: `--log-format json` or `CRCR_LOG_FORMAT=json`) every
    line on stderr is JSON, a command's own errors and an
    unexpected exception included (`JsonStderr`); `NO_COLOR` turns off the escape codes
    of typer's help and error panels as well as of crcr's tables.
    """
    _register_component_commands()
    if os.environ.get("NO_COLOR"):
        import typer.rich_utils

        typer.rich_utils.COLOR_SYSTEM = None
    if requested_format(sys.argv[1:], os.environ) != "json":
        app(prog_name="crcr")
        return
    import typer.core

    typer.core.HAS_RICH = False  # click's plain usage errors: one line, not a framed panel
    stderr = route_stderr_as_json()
    try:
        app(prog_name="crcr", standalone_mode=True)
    except Exception:
        # Not a traceback over many lines: one JSON line carrying it.
        logging.getLogger("crcr.cli").critical("crcr: unexpected error", exc_info=True)
        raise SystemExit(1) from None
    finally:
        stderr.close_line()


def _register_component_commands() -> None:
    """Attach the commands each component contributes (kept out of this module)."""
    from crcr.cli import culprits as culprits_cli
    from crcr.cli import dispatch as dispatch_cli
    from crcr.cli import hud as hud_cli
    from crcr.cli import sweep as sweep_cli
    from crcr.cli.levels import add_sync_command
    from crcr.demo import cli as demo_cli
    from crcr.hud.levels import cli as levels_cli
    from crcr.init import cli as init_cli
    from crcr.relay.allowlist import cli as allowlist_cli
    from crcr.relay.audit import cli as audit_cli
    from crcr.relay.doctor import cli as doctor_cli
    from crcr.reporter import cli as reporter_cli
    from crcr.sandbox import cli as sandbox_cli

    components = (
        allowlist_cli,
        audit_cli,
        doctor_cli,
        sweep_cli,
        dispatch_cli,
        culprits_cli,
        hud_cli,
        levels_cli,
        reporter_cli,
        sandbox_cli,
        demo_cli,
        init_cli,
    )
    # `crcr levels` is the HUD's group; the relay adds `status`, `sync` and `override`.
    add_sync_command(levels_cli.levels_app)
    for component in components:
        component.register(app)


if __name__ == "__main__":
    main()
    sys.exit(0)

"""`crcr demo`: relay, HUD, sandbox GitHub and simulated downstream CI in one command."""

from __future__ import annotations

import asyncio
import sys

import typer

from crcr.demo.options import OptionError, parse_options


def demo(
    duration: str | None = typer.Option(
        None, "--duration", help="Stop after this many seconds (default: run until Ctrl-C)."
    ),
    rate: str = typer.Option("12", "--rate", help="Upstream events per minute."),
    speed: str = typer.Option(
        "30", "--speed", help="Time compression for simulated CI (30: a 30-minute job takes 1)."
    ),
    port: str = typer.Option(
        "8000", "--port", envvar="CRCR_PORT", help="Port of the dashboard (0: any free port)."
    ),
    data_dir: str = typer.Option(
        "./crcr-data",
        "--data-dir",
        envvar="CRCR_DATA_DIR",
        help="Where results and state persist between runs.",
    ),
    open_browser: bool | None = typer.Option(
        None, "--open/--no-open", help="Open the dashboard in a browser (default: in a terminal)."
    ),
    seed: int | None = typer.Option(None, "--seed", help="Random seed, for a repeatable run."),
    history: str = typer.Option(
        "14", "--history", help="Days of simulated results stored first (0: none)."
    ),
) -> None:
    """Watch the whole loop on this machine: upstream PRs → relay → downstream CI → dashboard."""
    from crcr.config.cli_settings import output_console
    from crcr.demo.runner import run_demo
    from crcr.demo.stack import DemoError

    console = output_console()  # NO_COLOR honoured; whole lines into a pipe
    try:
        options = parse_options(
            duration=duration,
            rate=rate,
            speed=speed,
            port=port,
            data_dir=data_dir,
            open_browser=open_browser,
            interactive=console.is_terminal and sys.stdin.isatty(),
            seed=seed,
            history=history,
        )
        status = asyncio.run(run_demo(options, console))
    except (OptionError, DemoError) as exc:
        typer.echo(f"crcr demo: {exc}", err=True)
        raise typer.Exit(2) from None
    raise typer.Exit(status)


def register(app: typer.Typer) -> None:
    """Add `crcr demo` to the CLI."""
    app.command(name="demo")(demo)

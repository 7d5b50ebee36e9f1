"""`crcr sweep`: one sweeper pass from the command line (e.g. from cron or a k8s CronJob)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import typer

from crcr.settings import Settings, SettingsError
from crcr.stores.state import StateStoreUnavailable

if TYPE_CHECKING:  # the relay is imported only when `crcr sweep` runs: `crcr report` starts fast
    from crcr.relay.sweeper.report import SweepReport


def register(app: typer.Typer) -> None:
    """Add `crcr sweep`."""

    @app.command()
    def sweep() -> None:
        """Run one sweeper pass: time out zombie jobs, retry queued HUD writes and dispatches.

        Safe while `crcr serve` instances sweep too: transitions are atomic and queue
        items are leased, so nothing is done twice.
        """
        from crcr.cli_settings import settings_or_exit
        from crcr.versions import refusing_newer_data

        settings = settings_or_exit()
        try:
            with refusing_newer_data("crcr sweep"):
                report = asyncio.run(sweep_pass(settings))
        except StateStoreUnavailable as exc:
            typer.echo(f"crcr sweep: state store unavailable: {exc}", err=True)
            raise typer.Exit(1) from None
        except SettingsError as exc:
            typer.echo(f"crcr sweep: {exc}", err=True)
            raise typer.Exit(2) from None
        typer.echo(describe(report))


async def sweep_pass(settings: Settings) -> SweepReport:
    """Open what `crcr serve` opens, run one pass, close everything."""
    from crcr.runtime import open_runtime

    runtime = await open_runtime(settings)
    try:
        return await runtime.sweeper.sweep_once()
    finally:
        await runtime.close()


def describe(report: SweepReport) -> str:
    """One line per thing done, for the operator."""
    lines = [
        f"zombie jobs timed out: {report.zombies_finalised}",
        f"completions redone: {report.completions_redone}",
    ]
    if report.jobs_failed:
        lines.append(f"overdue jobs that failed (logged, tried again later): {report.jobs_failed}")
    for queue, counts in sorted(report.handled.items()):
        done = ", ".join(f"{result} {n}" for result, n in sorted(counts.items()))
        lines.append(f"queue {queue}: {done}")
    if report.cut_short is not None:
        lines.append(f"cut short ({report.cut_short}): the rest waits for the next pass")
    return "\n".join(lines)

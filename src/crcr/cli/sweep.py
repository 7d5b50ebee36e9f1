"""`crcr sweep`: one sweeper pass (cron, a k8s CronJob), or `--loop` as a process of its own."""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import TYPE_CHECKING

import typer

from crcr.config.settings import Settings, SettingsError
from crcr.stores.state import StateStoreUnavailable

log = logging.getLogger(__name__)

if TYPE_CHECKING:  # the relay is imported only when `crcr sweep` runs: `crcr report` starts fast
    from crcr.relay.sweeper.report import SweepReport


def register(app: typer.Typer) -> None:
    """Add `crcr sweep`."""

    @app.command()
    def sweep(
        loop: bool = typer.Option(
            False,
            "--loop",
            help="Keep sweeping until SIGTERM or SIGINT, as every `crcr serve` instance "
            "does in the background (for a deployment whose relays run without it).",
        ),
        interval: float = typer.Option(
            15.0, min=0.1, help="With --loop: seconds between passes while no item waits."
        ),
    ) -> None:
        """Time out zombie jobs, retry queued HUD writes, dispatches, check runs and comments.

        Safe beside `crcr serve` instances: the queues are drained under leases, and the
        leader's work (overdue jobs, level syncs) runs only while this process holds the
        sweeper lock, which one pass takes if it is free and gives up at its end.
        """
        from crcr.config.cli_settings import settings_or_exit
        from crcr.ops.versions import refusing_newer_data

        settings = settings_or_exit()
        try:
            with refusing_newer_data("crcr sweep"):
                if loop:  # logging is configured by the root command (CRCR_LOG_*)
                    asyncio.run(sweep_loop(settings, interval))
                    return
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
        return await runtime.sweeper.sweep_pass()
    finally:
        await runtime.close()


async def sweep_loop(settings: Settings, interval: float) -> None:
    """Sweep until SIGTERM or SIGINT; then finish (within `CRCR_SHUTDOWN_GRACE`), give up
    the lock and every lease, and return."""
    from crcr.relay.sweeper.sweeper import BackgroundSweeper
    from crcr.runtime import open_runtime

    runtime = await open_runtime(settings)
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    background = BackgroundSweeper(runtime.sweeper, interval=interval)
    try:
        background.start()
        log.info(
            "crcr sweep --loop: sweeping every %.0f s as %s",
            interval,
            runtime.sweeper.instance_id,
            extra={"instance": runtime.sweeper.instance_id},
        )
        await stopping.wait()
    finally:
        await background.stop(grace=settings.shutdown_grace)
        await runtime.close()


def describe(report: SweepReport) -> str:
    """One line per thing done, for the operator."""
    lines = [
        f"zombie jobs timed out: {report.zombies_finalised}",
        f"completions redone: {report.completions_redone}",
    ]
    if not report.led:
        lines.append("overdue jobs and level syncs: skipped (another instance leads)")
    if report.jobs_failed:
        lines.append(f"overdue jobs that failed (logged, tried again later): {report.jobs_failed}")
    for queue, counts in sorted(report.handled.items()):
        done = ", ".join(f"{result} {n}" for result, n in sorted(counts.items()))
        lines.append(f"queue {queue}: {done}")
    if report.cut_short is not None:
        lines.append(f"cut short ({report.cut_short}): the rest waits for the next pass")
    return "\n".join(lines)

"""`crcr sweep`: one sweeper pass from the command line (e.g. from cron or a k8s CronJob)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import httpx
import typer

from crcr.relay.hud_forwarder import forwarder_from_settings
from crcr.relay.sweeper import QueueHandler, Sweeper, SweepReport
from crcr.settings import Settings
from crcr.stores.state import StateStore, StateStoreUnavailable

QueueHandlersFactory = Callable[
    [Settings, StateStore, httpx.AsyncClient], Mapping[str, QueueHandler]
]


def register(app: typer.Typer, *, queue_handlers: QueueHandlersFactory | None = None) -> None:
    """Add `crcr sweep`; `queue_handlers` supplies handlers for queues other than "hud"."""

    @app.command()
    def sweep() -> None:
        """Run one sweeper pass: time out zombie jobs, retry queued HUD writes and dispatches.

        Safe while `crcr serve` instances sweep too: transitions are atomic and queue
        items are leased, so nothing is done twice.
        """
        from crcr.cli import settings_or_exit

        settings = settings_or_exit()
        try:
            report = asyncio.run(sweep_pass(settings, queue_handlers))
        except StateStoreUnavailable as exc:
            typer.echo(f"crcr sweep: state store unavailable: {exc}", err=True)
            raise typer.Exit(1) from None
        typer.echo(describe(report))


async def sweep_pass(
    settings: Settings, queue_handlers: QueueHandlersFactory | None = None
) -> SweepReport:
    """Open the configured stores, run one pass, close everything."""
    from crcr.stores.factory import open_state_store

    store = await open_state_store(settings)
    hud = None
    try:
        if not settings.hud_url:
            from crcr.hud.component import open_hud

            hud = await open_hud(settings, retention=False)
        async with httpx.AsyncClient() as http:
            forwarder = forwarder_from_settings(
                settings, store, http=http, ingestor=hud.ingestor if hud else None
            )
            extra = queue_handlers(settings, store, http) if queue_handlers else {}
            return await Sweeper(store, forwarder, settings, queue_handlers=extra).sweep_once()
    finally:
        if hud is not None:
            await hud.close()
        await store.close()


def describe(report: SweepReport) -> str:
    """One line per thing done, for the operator."""
    lines = [f"zombie jobs timed out: {report.zombies_finalised}"]
    for queue, counts in sorted(report.handled.items()):
        done = ", ".join(f"{result} {n}" for result, n in sorted(counts.items()))
        lines.append(f"queue {queue}: {done}")
    return "\n".join(lines)

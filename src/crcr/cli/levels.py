"""`crcr levels sync`: open, refresh and close the allowlist's level-change pull requests."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Annotated

import typer

from crcr.config.settings import Settings

if TYPE_CHECKING:  # the relay is imported only when the command runs: `crcr report` starts fast
    from crcr.relay.levels.sync import SyncReport
    from crcr.runtime import Runtime


def add_sync_command(group: typer.Typer) -> None:
    """Add `sync` to a `crcr levels` group (the HUD's `status` lives in the same group)."""
    group.command("sync")(sync)


def sync(
    propose_promotions: Annotated[
        bool,
        typer.Option(
            "--propose-promotions", help="Also propose L2 backends that are ready for L3."
        ),
    ] = False,
    device: Annotated[
        str | None,
        typer.Option(help="The L3 device an entry moving to L3 is put under (its label)."),
    ] = None,
) -> None:
    """Open, refresh and close the allowlist's level-change pull requests (idempotent).

    One pull request per backend whose level status says `demote` (and, with
    `--propose-promotions`, per ready L2 backend); a recovered backend's is closed.
    Needs CRCR_ALLOWLIST to be a GitHub blob URL and the GitHub App's settings.
    """
    from crcr.config.cli_settings import settings_or_exit
    from crcr.config.settings import SettingsError
    from crcr.github.errors import GitHubError
    from crcr.relay.levels.allowlist_edit import AllowlistEditError
    from crcr.relay.levels.status import LevelStatusError
    from crcr.stores.state import StateStoreUnavailable

    settings = settings_or_exit()
    try:
        report = asyncio.run(run_sync(settings, promotions=propose_promotions, device=device))
    except (GitHubError, LevelStatusError, AllowlistEditError, StateStoreUnavailable) as exc:
        typer.echo(f"crcr levels sync: {exc}", err=True)
        raise typer.Exit(1) from None
    except (LookupError, SettingsError) as exc:
        typer.echo(f"crcr levels sync: {exc.args[0]}", err=True)
        raise typer.Exit(2) from None
    typer.echo(describe(report))


async def run_sync(settings: Settings, *, promotions: bool, device: str | None) -> SyncReport:
    """Open what `crcr serve` opens, then `sync_levels`."""
    from crcr.runtime import open_runtime

    runtime = await open_runtime(settings)
    try:
        return await sync_levels(runtime, promotions=promotions, device=device)
    finally:
        await runtime.close()


async def sync_levels(runtime: Runtime, *, promotions: bool, device: str | None) -> SyncReport:
    """Refresh the demotions from the verdicts, then sync the pull requests."""
    from crcr.relay.levels.status import parse_level_status

    levels = runtime.levels
    if levels is None or levels.sync is None:
        raise LookupError(
            "CRCR_ALLOWLIST must be a GitHub blob URL "
            "(https://github.com/<owner>/<repo>/blob/<ref>/<path>) to propose changes to it"
        )
    statuses = parse_level_status(await levels.status())
    allowlist = await runtime.allowlist()
    await levels.book.refresh(statuses, allowlist)
    return await levels.sync.run(statuses, allowlist, promotions=promotions, device=device)


def describe(report: SyncReport) -> str:
    """One line per pull request touched, or that nothing changed."""
    lines = [f"opened: {repo}" for repo in report.opened]
    lines += [f"refreshed: {repo}" for repo in report.refreshed]
    lines += [f"closed: {repo}" for repo in report.closed]
    lines += [f"up to date: {repo}" for repo in report.unchanged]
    lines += [f"skipped {reason}" for reason in report.skipped]
    lines += [f"declined, snoozed: {repo}" for repo in report.snoozed]
    if not report.changed:
        lines.append("nothing to change")
    return "\n".join(lines)

"""`crcr levels status | sync | override`: the relay's level commands (SPEC §10.1, §10.2).

`status` reads the level status as `crcr serve` composes it (the allowlist's levels and
the relay's standings); `sync` opens, refreshes and closes the allowlist's level-change
pull requests; `override` sets or clears an operator's temporary downgrade.
"""

from __future__ import annotations

import asyncio
import getpass
import json
import re
from datetime import timedelta
from typing import TYPE_CHECKING, Annotated, Any

import typer

from crcr.config.settings import Settings

if TYPE_CHECKING:  # the relay is imported only when the command runs: `crcr report` starts fast
    from crcr.relay.levels.standing import Override
    from crcr.relay.levels.sync import SyncReport
    from crcr.runtime import Runtime

_DURATION = re.compile(r"^(\d+)\s*([smhdw]?)$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def add_sync_command(group: typer.Typer) -> None:
    """Add `status`, `sync` and `override` to the `crcr levels` group."""
    group.command("status")(status)
    group.command("sync")(sync)
    group.command("override")(override)


def status(
    as_json: Annotated[
        bool, typer.Option("--json", help="Print GET /api/crcr/level-status's JSON.")
    ] = False,
) -> None:
    """Print every backend's level, verdict and standing, as the API and the pages show them.

    Reads the allowlist (CRCR_ALLOWLIST), the state store (demotions, declines,
    overrides) and the results store (CRCR_DATABASE_URL); with CRCR_HUD_URL, that
    HUD's level status.
    """
    from crcr.config.cli_settings import output_console, settings_or_exit
    from crcr.config.settings import SettingsError
    from crcr.hud.levels.cli import status_table
    from crcr.relay.levels.status import LevelStatusError
    from crcr.stores.state import StateStoreUnavailable

    settings = settings_or_exit()
    try:
        report = asyncio.run(read_status(settings))
    except (LevelStatusError, StateStoreUnavailable) as exc:
        typer.echo(f"crcr levels status: {exc}", err=True)
        raise typer.Exit(1) from None
    except SettingsError as exc:
        typer.echo(f"crcr levels status: {exc}", err=True)
        raise typer.Exit(2) from None
    if as_json:
        typer.echo(json.dumps(report, ensure_ascii=False, indent=2))
        return
    output_console().print(status_table(report))


async def read_status(settings: Settings) -> dict[str, Any]:
    """The level status JSON, composed as `crcr serve` composes it."""
    import httpx

    from crcr.relay.levels.status import http_level_status, level_status_url
    from crcr.relay.levels.wiring import level_status_service

    if settings.hud_url:
        async with httpx.AsyncClient() as http:
            url = level_status_url(settings.hud_url)
            return dict(await http_level_status(http, url, timeout=settings.hud_timeout)())
    async with (
        _opened(settings) as (store, allowlist),
        level_status_service(settings, store, allowlist) as service,
    ):
        return await service.status()


def _opened(settings: Settings) -> Any:
    """The state store and the allowlist reader, opened as `crcr doctor` opens them."""
    from contextlib import asynccontextmanager

    from crcr.github.factory import github_client_from_settings
    from crcr.relay.allowlist.source import AllowlistSource
    from crcr.stores.factory import open_state_store

    @asynccontextmanager
    async def opened() -> Any:
        store = await open_state_store(settings)
        if not settings.allowlist:  # a HUD alone: the levels its results last reported
            try:
                yield store, _no_allowlist
            finally:
                await store.close()
            return
        github = github_client_from_settings(settings, store) if settings.github_app_id else None
        source = AllowlistSource.from_settings(
            settings, store, fetch_contents=github.get_contents if github else None
        )
        try:
            yield store, source.get
        finally:
            await source.aclose()
            if github is not None:
                await github.aclose()
            await store.close()

    return opened()


async def _no_allowlist() -> Any:
    from crcr.relay.allowlist.source import AllowlistUnavailable

    raise AllowlistUnavailable("CRCR_ALLOWLIST is not set")


def override(
    repo: Annotated[str, typer.Argument(help="The downstream repository, OWNER/REPO.")],
    level: Annotated[
        str | None, typer.Option("--level", help="L2 (no check runs) or L3 (non-blocking).")
    ] = None,
    duration: Annotated[
        str | None, typer.Option("--for", help="How long: 90m, 12h, 3d, 2w.")
    ] = None,
    reason: Annotated[str, typer.Option("--reason", help="Why; shown with the level.")] = "",
    by: Annotated[
        str | None, typer.Option("--by", help="Who sets it (default: the OS user).")
    ] = None,
    clear: Annotated[bool, typer.Option("--clear", help="End the override now.")] = False,
) -> None:
    """Downgrade a backend below its allowlist level for a while, or end that (RFC-0050).

    Kept in the state store: every relay instance follows within seconds, until it
    expires or `--clear`. Written to the audit trail; shown by `crcr levels status`,
    /crcr/levels, the backend page and `crcr doctor`.
    """
    from crcr.config.cli_settings import settings_or_exit
    from crcr.relay.allowlist.model import Level
    from crcr.relay.allowlist.source import AllowlistUnavailable
    from crcr.relay.levels.governance import OverrideRefused
    from crcr.stores.state import StateStoreUnavailable

    who = by or getpass.getuser()
    if not clear:
        if level is None or level not in Level.__members__:
            raise typer.BadParameter("must be L2 or L3", param_hint="--level")
        if duration is None:
            raise typer.BadParameter("say how long, e.g. 3d", param_hint="--for")
    settings = settings_or_exit()
    try:
        if clear:
            cleared = asyncio.run(run_override(settings, repo, None, timedelta(0), "", who))
            typer.echo(f"override of {repo} cleared" if cleared else f"{repo} had no override")
            return
        assert level is not None and duration is not None
        found = asyncio.run(
            run_override(settings, repo, Level[level], parse_duration(duration), reason, who)
        )
    except (OverrideRefused, AllowlistUnavailable, StateStoreUnavailable) as exc:
        typer.echo(f"crcr levels override: {exc}", err=True)
        raise typer.Exit(1) from None
    assert not isinstance(found, bool)
    typer.echo(
        f"{found.repo} treated as {found.level} until {found.until.isoformat()}"
        f" on every instance: {found.reason} (by {found.by})"
    )


def parse_duration(text: str) -> timedelta:
    """`90m`, `12h`, `3d`, `2w` or plain seconds."""
    match = _DURATION.match(text.strip().lower())
    if match is None:
        raise typer.BadParameter("must be a number with s, m, h, d or w (3d)", param_hint="--for")
    return timedelta(seconds=int(match.group(1)) * _UNITS[match.group(2)])


async def run_override(
    settings: Settings,
    repo: str,
    level: Any,
    duration: timedelta,
    reason: str,
    by: str,
) -> Override | bool:
    """Set (or, without a level, clear) the override; the audit entry is written before exit."""
    from crcr.relay.audit.trail import AuditTrail
    from crcr.relay.levels.book import DemotionBook
    from crcr.relay.levels.governance import LevelGovernance

    async with _opened(settings) as (store, allowlist):
        audit = AuditTrail(
            store, keep_days=settings.audit_days, keep_per_repo=settings.audit_max_per_repo
        )
        governance = LevelGovernance(
            DemotionBook(store), snooze_seconds=settings.demotion_snooze, audit=audit.record
        )
        try:
            if level is None:
                return await governance.clear_override(repo, by)
            return await governance.set_override(
                await allowlist(), repo, level, duration, reason, by
            )
        finally:
            await audit.aclose()


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

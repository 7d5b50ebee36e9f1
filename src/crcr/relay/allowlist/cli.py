"""`crcr allowlist check` validates an allowlist file (for the upstream's CI); `crcr allowlist
reload` makes every relay instance re-read the allowlist now (SPEC §12, revocation)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from crcr.relay.allowlist.model import Allowlist, AllowlistError, Level, parse_allowlist

if TYPE_CHECKING:
    from crcr.config.settings import Settings

allowlist_app = typer.Typer(
    name="allowlist",
    help="Work with the allowlist of downstream repositories (SPEC §3).",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    """Add this component's commands to the CLI."""
    app.add_typer(allowlist_app, name="allowlist")


@allowlist_app.callback()
def _allowlist_group() -> None:
    """Work with the allowlist of downstream repositories (SPEC §3)."""


@allowlist_app.command("check")
def check(
    file: Annotated[
        Path,
        typer.Argument(exists=True, dir_okay=False, readable=True, help="The allowlist YAML file."),
    ],
) -> None:
    """Validate an allowlist file: list every problem (exit 1) or summarise it (exit 0).

    Meant for the upstream repository's own CI, so that a bad edit fails its pull request
    instead of being rejected by the relay after it merges.
    """
    try:
        allowlist = parse_allowlist(file.read_bytes())
    except AllowlistError as exc:
        count = len(exc.problems)
        typer.echo(f"{file}: invalid allowlist, {count} problem{'s' if count != 1 else ''}")
        for problem in exc.problems:
            typer.echo(f"  {problem}")
        raise typer.Exit(1) from None
    for line in summary_lines(file, allowlist):
        typer.echo(line)


@allowlist_app.command("reload")
def reload() -> None:
    """Make every relay instance re-read CRCR_ALLOWLIST within seconds, not at its TTL.

    Moves the allowlist's version stamp in the state store (CRCR_REDIS_URL, or the
    SQLite file in CRCR_DATA_DIR): each instance checks it before its callback
    decisions. Use it after removing a misbehaving downstream, when the change did not
    arrive as a push webhook. Prints the allowlist now in force (exit 0), or why none
    could be read (exit 1: the instances keep their last good one).
    """
    from crcr.config.cli_settings import settings_or_exit
    from crcr.config.settings import SettingsError
    from crcr.relay.allowlist.source import AllowlistUnavailable
    from crcr.stores.state import StateStoreUnavailable

    settings = settings_or_exit()
    try:
        stamp, location, allowlist = asyncio.run(_announce(settings))
    except SettingsError as exc:
        typer.echo(f"crcr allowlist reload: {exc}", err=True)
        raise typer.Exit(2) from None
    except (StateStoreUnavailable, AllowlistUnavailable) as exc:
        typer.echo(f"crcr allowlist reload: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"allowlist stamp moved to {stamp}: every instance re-reads it")
    for line in summary_lines(location, allowlist):
        typer.echo(line)


async def _announce(settings: Settings) -> tuple[int, str, Allowlist]:
    """Move the stamp and read the allowlist as the instances will."""
    from crcr.github.factory import github_client_from_settings
    from crcr.relay.allowlist.source import AllowlistSource
    from crcr.stores.factory import open_state_store

    store = await open_state_store(settings)
    try:
        github = github_client_from_settings(settings, store) if settings.github_app_id else None
        source = AllowlistSource.from_settings(
            settings, store, fetch_contents=github.get_contents if github else None
        )
        try:
            allowlist = await source.announce_change("cli")
            return await store.allowlist_stamp(), str(source.location), allowlist
        finally:
            await source.aclose()
            if github is not None:
                await github.aclose()
    finally:
        await store.close()


def summary_lines(file: Path | str, allowlist: Allowlist) -> list[str]:
    """The levels of a valid allowlist, as `check` prints them."""
    total = len(allowlist)
    lines = [f"{file}: valid allowlist, {_repositories(total)}"]
    if total == 0:
        lines[0] += " (empty: nothing is dispatched)"
    for level in Level:
        line = f"  {level}: {_repositories(len(allowlist.repos_at(level)))}"
        if level == Level.L3 and allowlist.devices():
            devices = ", ".join(
                f"{device} {len(allowlist.repos_for_device(device))}"
                for device in allowlist.devices()
            )
            line += f" (devices: {devices})"
        if level == Level.L4 and allowlist.repos_at(Level.L4):
            line += f" (devices if demoted: {_l4_devices(allowlist)})"
        lines.append(line)
    if allowlist.buildkite_repos:
        lines.append(
            f"  buildkite_repos: {len(allowlist.buildkite_repos)} pipeline(s), not used:"
            " crcr maps Buildkite pipelines in CRCR_OIDC_ISSUERS"
        )
    return lines


def _l4_devices(allowlist: Allowlist) -> str:
    """Each L4 entry's device, and whether it is named or its repository's name.

    SPEC §10.2: a demoted L4 backend is label-gated on `ciflow/crcr/<device>` and its
    demotion pull request moves it under `L3: <device>:`.
    """
    parts = []
    for entry in allowlist.entries:
        if entry.level != Level.L4 or entry.device is None:
            continue
        derived = entry.device == entry.repo.split("/", 1)[1].lower()
        parts.append(f"{entry.repo} → {entry.device}" + (" (its name)" if derived else ""))
    return ", ".join(parts)


def _repositories(count: int) -> str:
    return f"{count} repositor{'y' if count == 1 else 'ies'}"

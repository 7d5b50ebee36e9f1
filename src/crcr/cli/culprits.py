"""`crcr culprits` and `crcr bisect`: read the bisections, or start one by hand (SPEC §14)."""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING, Annotated

import typer

from crcr.config.settings import Settings

if TYPE_CHECKING:  # the relay is imported only when a command runs: `crcr report` starts fast
    from crcr.relay.culprits.record import Bisection

FULL_SHA = re.compile(r"^[0-9a-fA-F]{40}$")


def register(app: typer.Typer) -> None:
    """Add `crcr culprits` and `crcr bisect`."""
    app.command("culprits")(culprits)
    app.command("bisect")(bisect)


def culprits(
    repo: Annotated[
        str | None, typer.Option("--repo", help="Only this backend, owner/repo.")
    ] = None,
) -> None:
    """List the bisections, newest first: range, verdict, culprit and every step.

    Read from the state store the relay keeps them in. Exit 0, also when there are none.
    """
    from crcr.config.cli_settings import settings_or_exit
    from crcr.stores.state import StateStoreUnavailable

    settings = settings_or_exit()
    try:
        lines = asyncio.run(culprit_lines(settings, repo))
    except StateStoreUnavailable as exc:
        typer.echo(f"crcr culprits: {exc}", err=True)
        raise typer.Exit(1) from None
    for line in lines or ["no bisections" + (f" for {repo}" if repo else "")]:
        typer.echo(line)


async def culprit_lines(settings: Settings, repo: str | None) -> list[str]:
    """What `crcr culprits` prints."""
    import time

    from crcr.relay.culprits.api import stored_bisections
    from crcr.relay.culprits.report import describe, newest_first
    from crcr.stores.factory import open_state_store

    store = await open_state_store(settings)
    try:
        found = newest_first(await stored_bisections(store), repo)
    finally:
        await store.close()
    now = time.time()
    return [line for bisection in found for line in describe(bisection, now)]


def bisect(
    repo: Annotated[
        str,
        typer.Option("--repo", help="The allowlisted backend, owner/repo.", show_default=False),
    ],
    good: Annotated[
        str, typer.Option("--good", help="The last upstream commit that passed (full SHA).")
    ],
    bad: Annotated[
        str, typer.Option("--bad", help="The first upstream commit that failed (full SHA).")
    ],
) -> None:
    """Start a bisection of the upstream commits after --good up to --bad on one backend.

    For a backend owner who already knows the range. The first `crcr_bisect` dispatch is
    sent now; the serving relay's leader drives the rest, and `crcr culprits` shows it.
    Exit 0 when it started, 1 when it was refused (the message says why).
    """
    from crcr.config.cli_settings import settings_or_exit
    from crcr.github.errors import GitHubError
    from crcr.relay.allowlist.source import AllowlistUnavailable
    from crcr.relay.culprits.commits import RangeUnknown
    from crcr.relay.culprits.finder import BisectRefused
    from crcr.relay.culprits.report import describe
    from crcr.stores.state import StateStoreUnavailable

    for option, value in (("--good", good), ("--bad", bad)):
        if not FULL_SHA.match(value):
            typer.echo(f"crcr bisect: {option} must be a full 40-character SHA", err=True)
            raise typer.Exit(2)
    settings = settings_or_exit()
    try:
        started = asyncio.run(start_bisection(settings, repo=repo, good=good, bad=bad))
    except (BisectRefused, RangeUnknown) as exc:
        typer.echo(f"crcr bisect: {exc}", err=True)
        raise typer.Exit(1) from None
    except (GitHubError, AllowlistUnavailable, StateStoreUnavailable) as exc:
        typer.echo(f"crcr bisect: {exc}", err=True)
        raise typer.Exit(1) from None
    for line in describe(started, started.started_at):
        typer.echo(line)


async def start_bisection(settings: Settings, *, repo: str, good: str, bad: str) -> Bisection:
    """Open what `crcr serve` opens, start the bisection through its finder, close."""
    from crcr.relay.allowlist.model import Level
    from crcr.relay.culprits.finder import BisectRefused
    from crcr.runtime import open_runtime

    runtime = await open_runtime(settings)
    try:
        if runtime.culprits is None:
            raise BisectRefused(
                "culprit finding needs the in-process HUD (CRCR_HUD_URL is set): "
                "bisect results are read from its rows"
            )
        entry = (await runtime.allowlist()).entry(repo)
        if entry is None or entry.level < Level.L2:
            raise BisectRefused(f"{repo} is not on the allowlist at L2 or above")
        return await runtime.culprits.start(entry.repo, good, bad, origin="manual")
    finally:
        await runtime.close()

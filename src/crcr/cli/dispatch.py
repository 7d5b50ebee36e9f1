"""`crcr dispatch`: send one dispatch to one allowlisted downstream (SPEC §12)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Annotated

import typer

from crcr.config.settings import Settings

if TYPE_CHECKING:  # the relay is imported only when the command runs: `crcr report` starts fast
    from crcr.relay.webhook.manual_dispatch import ManualDispatch


def register(app: typer.Typer) -> None:
    """Add `crcr dispatch`."""
    app.command("dispatch")(dispatch)


def dispatch(
    repo: Annotated[
        str,
        typer.Option("--repo", help="The allowlisted downstream, owner/repo.", show_default=False),
    ],
    pr: Annotated[
        int | None,
        typer.Option("--pr", min=1, help="Dispatch the upstream pull request N as it is now."),
    ] = None,
    sha: Annotated[
        str | None,
        typer.Option("--sha", help="Dispatch a push of this upstream commit (full SHA)."),
    ] = None,
) -> None:
    """Send one dispatch, for an upstream PR or commit, to one allowlisted downstream.

    It takes the webhook's path (dispatch record first, trimming, the retry queue), so
    the downstream's callbacks bind and show on the HUD under the delivery id printed
    first. For onboarding a backend and for re-trying one. Exit 0 when GitHub accepted
    the dispatch or it waits in the retry queue, 1 when it failed or was refused.
    """
    from crcr.config.cli_settings import settings_or_exit
    from crcr.config.settings import SettingsError
    from crcr.github.errors import GitHubError
    from crcr.relay.allowlist.source import AllowlistUnavailable
    from crcr.relay.webhook.fanout import Result
    from crcr.relay.webhook.manual_dispatch import DispatchRefused, describe
    from crcr.stores.state import StateStoreUnavailable

    if (pr is None) == (sha is None):
        typer.echo("crcr dispatch: give exactly one of --pr N and --sha SHA", err=True)
        raise typer.Exit(2)
    settings = settings_or_exit()
    try:
        sent = asyncio.run(run_dispatch(settings, repo=repo, pr=pr, sha=sha))
    except DispatchRefused as exc:
        typer.echo(f"crcr dispatch: {exc}", err=True)
        raise typer.Exit(1) from None
    except (GitHubError, AllowlistUnavailable, StateStoreUnavailable) as exc:
        typer.echo(f"crcr dispatch: {exc}", err=True)
        raise typer.Exit(1) from None
    except SettingsError as exc:
        typer.echo(f"crcr dispatch: {exc}", err=True)
        raise typer.Exit(2) from None
    for line in describe(sent):
        typer.echo(line)
    if sent.outcome.result not in (Result.DISPATCHED, Result.QUEUED):
        raise typer.Exit(1)


async def run_dispatch(
    settings: Settings, *, repo: str, pr: int | None, sha: str | None
) -> ManualDispatch:
    """Open what `crcr serve` opens, send the dispatch through its fan-out, close."""
    from crcr.relay.webhook.manual_dispatch import send_manual_dispatch
    from crcr.runtime import open_runtime

    runtime = await open_runtime(settings)
    try:
        return await send_manual_dispatch(
            fanout=runtime.fanout,
            github=runtime.github,
            allowlist=runtime.allowlist,
            upstream_repo=settings.upstream_repo,
            repo=repo,
            pr_number=pr,
            sha=sha,
        )
    finally:
        await runtime.close()

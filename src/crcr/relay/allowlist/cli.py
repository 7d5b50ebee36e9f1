"""`crcr allowlist check`: validate an allowlist file, for the upstream repository's CI."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from crcr.relay.allowlist.model import Allowlist, AllowlistError, Level, parse_allowlist

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


def summary_lines(file: Path, allowlist: Allowlist) -> list[str]:
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
        lines.append(line)
    if allowlist.buildkite_repos:
        lines.append(
            f"  buildkite_repos: {len(allowlist.buildkite_repos)} pipeline(s), not used:"
            " crcr maps Buildkite pipelines in CRCR_OIDC_ISSUERS"
        )
    return lines


def _repositories(count: int) -> str:
    return f"{count} repositor{'y' if count == 1 else 'ies'}"

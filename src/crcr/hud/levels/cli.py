"""`crcr levels …`: the group, and the level status as a table.

The group lives here, with the HUD, because the status is the HUD's reading; the
relay adds its commands (`status`, `sync`, `override`, in `crcr.cli.levels`) to
`levels_app` before `crcr.cli` registers it: `status` needs the relay's allowlist and
standings to tell the story the API tells (SPEC §10.2 invariant 4).
"""

from __future__ import annotations

from typing import Any

import typer

levels_app = typer.Typer(
    help="Backend levels: measured criteria and verdicts.", no_args_is_help=True
)


def status_table(status: dict[str, Any]) -> Any:
    """The verdicts as a rich table: a backend's criteria one per line under its verdict."""
    from rich.table import Table

    table = Table(title=f"Level status at {status['generated_at']}")
    for heading in ("backend", "level", "verdict", "criterion", "measured", "target", "met"):
        table.add_column(heading)
    for repo in status["repos"]:
        verdict = "no data" if repo["noData"] else (repo["change"] or "keep")
        verdict += f", {repo['windowDays']} d" + "".join(standing_notes(repo))
        level = repo["level"]
        if repo.get("effectiveLevel", level) != level:
            level += f" (treated as {repo['effectiveLevel']})"
        head = [repo["repo"], level, verdict]
        if not repo["criteria"]:
            table.add_row(*head, "", "", "", "")
        for criterion in repo["criteria"]:
            measured = criterion["measured"]
            table.add_row(
                *head,
                criterion["criterion"],
                "-" if measured is None else f"{measured:g}",
                criterion["target"],
                {True: "yes", False: "NO", None: "-"}[criterion["met"]],
            )
            head = ["", "", ""]
    return table


def standing_notes(repo: dict[str, Any]) -> list[str]:
    """A backend's demotion, decline and override, one note each."""
    notes = []
    if repo.get("demoted") is not None:
        demoted = repo["demoted"]
        notes.append(f"\ndemoted since {demoted['since']}")
        notes.append(f"\n  {demoted['pr_url']}" if demoted.get("pr_url") else "\n  PR not opened")
    if repo.get("declined") is not None:
        declined = repo["declined"]
        by, at, until = declined["by"], declined["at"], declined["until"]
        notes.append(f"\ndeclined by {by} at {at}, until {until}")
    if repo.get("override") is not None:
        override = repo["override"]
        notes.append(
            f"\noverride {override['level']} until {override['until']} by {override['by']}:"
            f" {override['reason']}"
        )
    return notes


def register(app: typer.Typer) -> None:
    """Add `crcr levels …` to the CLI."""
    app.add_typer(levels_app, name="levels")

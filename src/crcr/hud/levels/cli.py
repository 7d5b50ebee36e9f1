"""`crcr levels …`: the level status on the command line (`status`; the relay adds `sync`).

The group lives here, with the HUD, because `status` is the HUD's reading; other
components add their commands to `levels_app` before `crcr.cli` registers it.
"""

from __future__ import annotations

import json
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
        if repo["demoted"] is not None:
            verdict += f" (demoted since {repo['demoted']['since']})"
        head = [repo["repo"], repo["level"], f"{verdict}, {repo['windowDays']} d"]
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


@levels_app.command()
def status(
    as_json: bool = typer.Option(False, "--json", help="Print GET /api/crcr/level-status's JSON."),
) -> None:
    """Print every backend's verdict, read from the results store (CRCR_DATABASE_URL)."""
    import asyncio

    from crcr.config.cli_settings import output_console, settings_or_exit
    from crcr.hud.db import create_results_engine, migrate
    from crcr.hud.levels.status import LevelStatusService

    settings = settings_or_exit()
    engine = create_results_engine(settings.hud_database_url)
    try:
        migrate(engine)
        report = asyncio.run(LevelStatusService(engine, settings.level_criteria).status())
    finally:
        engine.dispose()
    if as_json:
        typer.echo(json.dumps(report, ensure_ascii=False, indent=2))
        return
    output_console().print(status_table(report))


def register(app: typer.Typer) -> None:
    """Add `crcr levels …` to the CLI."""
    app.add_typer(levels_app, name="levels")

"""`crcr init downstream`: write a ready workflow into a downstream repository."""

from __future__ import annotations

from pathlib import Path

import typer

from crcr.init.badge import PLACEHOLDER_REPO, badge_markdown, check_repo
from crcr.init.workflow import (
    CANCEL_TEMPLATE,
    DEFAULT_ACTION,
    PLACEHOLDER_CALLBACK_URL,
    TEMPLATES,
    InitError,
    placeholders_left,
    render_workflow,
    template_text,
)

WORKFLOW_PATH = Path(".github") / "workflows" / "crcr.yml"
CANCEL_WORKFLOW_PATH = Path(".github") / "workflows" / "crcr-cancel.yml"

init_app = typer.Typer(
    name="init",
    help="Scaffold the files a repository needs to take part in a relay.",
    no_args_is_help=True,
)


@init_app.callback()
def _init_group() -> None:
    """Scaffold the files a repository needs to take part in a relay."""


@init_app.command("downstream")
def downstream(
    template: str = typer.Option(
        "minimal", "--template", help=f"Which workflow: {', '.join(TEMPLATES)}."
    ),
    path: Path = typer.Option(  # noqa: B008
        Path("."), "--path", help="The downstream repository's checkout."
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing crcr.yml."),
    callback_url: str = typer.Option(
        PLACEHOLDER_CALLBACK_URL, "--callback-url", help="The relay's /github/callback URL."
    ),
    action: str = typer.Option(
        DEFAULT_ACTION,
        "--action",
        help="The crcr-report action the jobs report with (owner/repo/path@ref, or ./path for"
        " a copy in the repository); the default follows crcr's v1 releases.",
    ),
    repo: str = typer.Option(
        "", "--repo", help="This repository (OWNER/REPO), for the README badge's Markdown."
    ),
    cancel_on_supersede: bool = typer.Option(
        False,
        "--cancel-on-supersede",
        help="Also write crcr-cancel.yml: it cancels a superseded pull request head's runs"
        " when the relay sends crcr_cancel.",
    ),
) -> None:
    """Write .github/workflows/crcr.yml: a workflow the relay's dispatches start."""
    try:
        badge_repo = check_repo(repo)
        text = render_workflow(template, action=action, callback_url=callback_url)
        written = write_workflow(path, text, force=force)
        cancel = None
        if cancel_on_supersede:
            cancel_text = template_text(CANCEL_TEMPLATE)
            cancel = write_workflow(path, cancel_text, force=force, at=CANCEL_WORKFLOW_PATH)
    except InitError as exc:
        typer.echo(f"crcr init downstream: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"wrote {written} (template {template})")
    if cancel is not None:
        typer.echo(f"wrote {cancel} (template {CANCEL_TEMPLATE})")
    for line in action_lines(action, text.count(f"uses: {action}")):
        typer.echo(line)
    for advice in placeholders_left(callback_url):
        typer.echo(f"next: {advice}")
    typer.echo("next: ask the upstream's maintainers to add this repository to the allowlist")
    typer.echo("badge: paste into your README (its level and state on the relay):")
    typer.echo(f"  {badge_markdown(callback_url, badge_repo)}")
    if badge_repo == PLACEHOLDER_REPO:
        typer.echo(f"  (replace {PLACEHOLDER_REPO}, or run again with --force --repo OWNER/REPO)")


def action_lines(action: str, steps: int) -> list[str]:
    """Say which action reference the workflow's report steps use, and how to change it.

    The default names crcr's published home; a relay operator may serve the action from
    a copy of their own (a fork, a pinned commit), which the downstream must then name.
    """
    lines = [f"action: the {steps} report steps use {action}"]
    if action == DEFAULT_ACTION:
        lines.append(
            "  that is crcr's published action; if your relay's operator publishes their own "
            "copy, run again with --force --action OWNER/REPO/action/crcr-report@REF "
            "(or --action ./PATH for a copy inside this repository)"
        )
    return lines


def write_workflow(repo_dir: Path, text: str, *, force: bool, at: Path = WORKFLOW_PATH) -> Path:
    """Write the workflow under `repo_dir` (at `at`), refusing to replace one unless forced."""
    if not repo_dir.is_dir():
        raise InitError(f"--path {str(repo_dir)!r} is not a directory")
    target = repo_dir / at
    if target.exists() and not force:
        raise InitError(f"{target} exists; pass --force to overwrite it")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InitError(f"cannot write {target}: {exc.strerror or exc}") from None
    return target


def register(app: typer.Typer) -> None:
    """Add `crcr init …` to the CLI."""
    app.add_typer(init_app, name="init")

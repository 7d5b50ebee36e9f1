"""`crcr doctor OWNER/REPO`: one line per check, the next step, exit 0 only if all pass."""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from crcr.config.settings import Settings
    from crcr.relay.doctor.checks import Check

_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


def register(app: typer.Typer) -> None:
    """Add `crcr doctor` to the CLI."""
    app.command("doctor")(doctor)


def doctor(
    repo: Annotated[str, typer.Argument(help="The downstream repository, OWNER/REPO.")],
) -> None:
    """Where a downstream backend stands: allowlist entry and level, App installed, last
    dispatch, last callback (accepted, or why refused), OIDC issuer, L3/L4 check runs.

    Reads the allowlist (CRCR_ALLOWLIST), asks GitHub as the App (CRCR_GITHUB_APP_ID,
    CRCR_GITHUB_APP_PRIVATE_KEY) and reads the audit trail in the state store. Prints the
    next step for the first failing check; exits 0 only when every check passes.
    """
    from crcr.config.cli_settings import settings_or_exit
    from crcr.config.settings import SettingsError
    from crcr.stores.state import StateStoreUnavailable

    if not _REPO.match(repo):
        raise typer.BadParameter("must be OWNER/REPO", param_hint="REPO")
    settings = settings_or_exit()
    try:
        checks = asyncio.run(run_doctor(settings, repo))
    except SettingsError as exc:
        typer.echo(f"crcr doctor: {exc}", err=True)
        raise typer.Exit(2) from None
    except StateStoreUnavailable as exc:
        typer.echo(f"crcr doctor: {exc}", err=True)
        raise typer.Exit(1) from None
    for line in report_lines(repo, checks):
        typer.echo(line)
    if not all(check.ok for check in checks):
        raise typer.Exit(1)


def report_lines(repo: str, checks: list[Check]) -> list[str]:
    """What the doctor prints: a header, one line per check, the next step if one failed."""
    lines = [f"crcr doctor {repo}"]
    width = max(len(check.name) for check in checks)
    for check in checks:
        lines.append(f"  [{'ok' if check.ok else 'FAIL':>4}] {check.name:<{width}}  {check.answer}")
    failing = next((check for check in checks if not check.ok), None)
    if failing is None:
        lines.append("all checks pass")
    else:
        lines.append(f"next step ({failing.name}): {failing.next_step}")
    return lines


async def run_doctor(settings: Settings, repo: str) -> list[Check]:
    """Open the store, the allowlist and the App's GitHub client; run the checks."""
    from crcr.config.settings import SettingsError
    from crcr.github.factory import github_client_from_settings
    from crcr.relay.allowlist.source import AllowlistSource
    from crcr.relay.doctor.checks import Subject, diagnose
    from crcr.relay.doctor.github_app import AppLookups
    from crcr.relay.levels.wiring import level_status_service
    from crcr.stores.factory import open_state_store
    from crcr.web.web_urls import github_web_url

    store = await open_state_store(settings)
    app: AppLookups | None = None
    problem = None
    try:
        app = AppLookups.from_settings(settings)
    except SettingsError as exc:
        problem = str(exc)
    github = github_client_from_settings(settings, store) if app is not None else None
    try:
        source = AllowlistSource.from_settings(
            settings, store, fetch_contents=github.get_contents if github else None
        )
        try:
            subject = Subject(
                repo=repo,
                settings=settings,
                store=store,
                allowlist=source.get,
                allowlist_source=str(source.location),
                app=app,
                app_problem=problem,
                web_url=github_web_url(settings.github_api_url),
                levels=lambda: level_status_service(settings, store, source.get),
            )
            return await diagnose(subject)
        finally:
            await source.aclose()
    finally:
        for closer in (app, github):
            if closer is not None:
                await closer.aclose()
        await store.close()

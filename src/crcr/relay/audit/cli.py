"""`crcr audit`: print the audit trail from the state store (SPEC §12), as a table or JSON."""

from __future__ import annotations

import asyncio
import json
import re
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from crcr.config.settings import Settings

_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhd])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
KINDS = ("callback", "dispatch", "check_run", "level")


def register(app: typer.Typer) -> None:
    """Add `crcr audit` to the CLI."""
    app.command("audit")(audit)


def parse_since(text: str, *, now: float | None = None) -> float:
    """`--since`: an age (`90s`, `30m`, `2h`, `7d`) or an ISO-8601 time (UTC if no zone)."""
    now = time.time() if now is None else now
    relative = _RELATIVE.match(text.strip().lower())
    if relative:
        return now - float(relative.group(1)) * _UNITS[relative.group(2)]
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is neither an age (30m, 2h, 7d) nor an ISO-8601 time",
            param_hint="--since",
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def audit(
    repo: Annotated[
        str | None, typer.Option(help="Only this downstream repo (or '(unauthenticated)').")
    ] = None,
    since: Annotated[
        str | None, typer.Option(help="Only entries since: an age (30m, 2h, 7d) or ISO time.")
    ] = None,
    refused: Annotated[bool, typer.Option("--refused", help="Only refused callbacks.")] = False,
    kind: Annotated[
        str | None, typer.Option(help="Only callback, dispatch or check_run entries.")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, help="At most this many, newest first.")] = 100,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON array.")] = False,
) -> None:
    """Print what downstream repos sent and what the relay decided, newest first.

    Every callback decision (accepted, duplicate, refused with its status and reason),
    dispatch outcome and check run, kept in the state store (CRCR_REDIS_URL, or the
    SQLite file in CRCR_DATA_DIR) for CRCR_AUDIT_DAYS, at most CRCR_AUDIT_MAX_PER_REPO
    per repo. Callbacks whose token failed verification are under '(unauthenticated)'.
    """
    from crcr.config.cli_settings import settings_or_exit
    from crcr.stores.state import StateStoreUnavailable

    if kind is not None and kind not in KINDS:
        raise typer.BadParameter(f"must be one of {', '.join(KINDS)}", param_hint="--kind")
    start = parse_since(since) if since else 0.0
    settings = settings_or_exit()
    try:
        entries = asyncio.run(read_trail(settings, repo, start, limit, refused, kind))
    except StateStoreUnavailable as exc:
        typer.echo(f"crcr audit: {exc}", err=True)
        raise typer.Exit(1) from None
    if as_json:
        typer.echo(json.dumps(entries, ensure_ascii=False, indent=2))
        return
    from crcr.config.cli_settings import output_console

    output_console().print(audit_table(entries))


async def read_trail(
    settings: Settings,
    repo: str | None,
    since: float,
    limit: int,
    refused: bool = False,
    kind: str | None = None,
) -> list[dict[str, Any]]:
    """The entries `crcr audit` prints, each with its time also as ISO-8601 (`time`)."""
    from crcr.stores.factory import open_state_store

    store = await open_state_store(settings)
    try:
        # Filters are applied here: read enough that `limit` survives them.
        wanted = limit if not (refused or kind) else max(limit, settings.audit_max_per_repo)
        found = await store.audit_entries(repo, since=since, limit=wanted)
    finally:
        await store.close()
    if kind is not None:
        found = [e for e in found if e.get("kind") == kind]
    if refused:
        found = [e for e in found if e.get("kind") == "callback" and e["decision"] == "refused"]
    return [{"time": iso(e["at"]), **e} for e in found[:limit]]


def iso(at: float) -> str:
    """Epoch seconds as ISO-8601 UTC to the millisecond."""
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds")


def audit_table(entries: list[dict[str, Any]]) -> Any:
    """The entries as a rich table, one row each."""
    from rich.table import Table

    table = Table(title=f"crcr audit trail: {len(entries)} entries, newest first")
    for heading in ("time (UTC)", "repo", "kind", "decision", "status", "reason", "delivery"):
        table.add_column(heading)
    table.add_column("job / check run / subject", overflow="fold")
    for e in entries:
        repo = e.get("repo") or f"{e['bucket']} (claims {e.get('claimed_repo') or '?'})"
        detail = e.get("job_key") or e.get("check_name") or ""
        if e.get("subject"):
            detail = f"{detail}\n{e['subject']}" if detail else str(e["subject"])
        table.add_row(
            e["time"][:23],
            repo,
            e["kind"],
            e["decision"],
            "" if e.get("status") is None else str(e["status"]),
            e.get("reason") or "",
            e.get("delivery_id") or "",
            detail,
        )
    return table

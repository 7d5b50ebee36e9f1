"""The HUD's level verdicts (SPEC §10.1's JSON) as values, and where the relay reads them.

With the in-process HUD the relay asks `Hud.level_status()`; with an external HUD
(`CRCR_HUD_URL`) it reads `GET <HUD base>/api/crcr/level-status`, the base being the
ingestion URL without its `/api/crcr/results`. Either way the document is checked here,
so a HUD that answers something else is an error naming the field, not a wrong demotion.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from crcr.relay.allowlist.model import Level

LevelStatusSource = Callable[[], Awaitable[Mapping[str, Any]]]
"""Returns the level-status document (the JSON of `GET /api/crcr/level-status`)."""

CHANGES = frozenset({"demote", "promote"})
INGEST_PATH = "/api/crcr/results"
STATUS_PATH = "/api/crcr/level-status"


class LevelStatusError(Exception):
    """The level status could not be had, or is not SPEC §10.1's shape."""


@dataclass(frozen=True)
class Criterion:
    """One criterion's row: what was measured against which target."""

    criterion: str
    measured: float | None
    target: str
    met: bool | None


@dataclass(frozen=True)
class BackendStatus:
    """One backend's verdict: its level, the change the criteria call for, and why."""

    repo: str
    level: Level
    change: str | None
    no_data: bool
    window_days: int
    criteria: tuple[Criterion, ...]


def parse_level_status(document: Mapping[str, Any]) -> dict[str, BackendStatus]:
    """Every backend's status by lower-cased repo; `LevelStatusError` names a bad field."""
    repos = document.get("repos")
    if not isinstance(repos, list):
        raise LevelStatusError("level status: `repos` must be a list")
    statuses: dict[str, BackendStatus] = {}
    for index, raw in enumerate(repos):
        status = _backend(raw, f"repos[{index}]")
        statuses[status.repo.lower()] = status
    return statuses


def _backend(raw: object, where: str) -> BackendStatus:
    if not isinstance(raw, Mapping):
        raise LevelStatusError(f"level status: {where} must be an object")
    repo, level, change = raw.get("repo"), raw.get("level"), raw.get("change")
    if not isinstance(repo, str) or "/" not in repo:
        raise LevelStatusError(f"level status: {where}.repo must be owner/repo")
    if not isinstance(level, str) or level not in Level.__members__:
        raise LevelStatusError(f"level status: {where}.level must be L1-L4, got {level!r}")
    if change is not None and change not in CHANGES:
        raise LevelStatusError(f"level status: {where}.change must be demote, promote or null")
    criteria = raw.get("criteria") or []
    if not isinstance(criteria, list):
        raise LevelStatusError(f"level status: {where}.criteria must be a list")
    window = raw.get("windowDays")
    return BackendStatus(
        repo=repo,
        level=Level[level],
        change=change,
        no_data=bool(raw.get("noData")),
        window_days=window if isinstance(window, int) else 0,
        criteria=tuple(_criterion(c, f"{where}.criteria[{i}]") for i, c in enumerate(criteria)),
    )


def _criterion(raw: object, where: str) -> Criterion:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("criterion"), str):
        raise LevelStatusError(f"level status: {where}.criterion must be a string")
    measured, met = raw.get("measured"), raw.get("met")
    if measured is not None and not isinstance(measured, int | float):
        raise LevelStatusError(f"level status: {where}.measured must be a number or null")
    return Criterion(
        criterion=raw["criterion"],
        measured=None if measured is None else float(measured),
        target=str(raw.get("target") or ""),
        met=met if isinstance(met, bool) else None,
    )


def level_status_url(hud_url: str) -> str:
    """The level-status URL of the HUD whose ingestion URL is `hud_url` (`CRCR_HUD_URL`).

    The page is public (SPEC §10.1), so credentials in the ingestion URL are left out.
    """
    parts = urlsplit(hud_url)
    path = parts.path.rstrip("/")
    base = path.removesuffix(INGEST_PATH) if path.endswith(INGEST_PATH) else ""
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, base + STATUS_PATH, "", ""))


def http_level_status(http: httpx.AsyncClient, url: str, *, timeout: float) -> LevelStatusSource:
    """A source that reads an external HUD's level status over HTTP."""

    async def fetch() -> Mapping[str, Any]:
        try:
            response = await http.get(url, timeout=timeout)
        except httpx.HTTPError as exc:
            raise LevelStatusError(f"level status from {url}: {type(exc).__name__}") from exc
        if response.status_code != 200:
            raise LevelStatusError(f"level status from {url}: HTTP {response.status_code}")
        try:
            document = response.json()
        except ValueError:
            raise LevelStatusError(f"level status from {url}: not JSON") from None
        if not isinstance(document, dict):
            raise LevelStatusError(f"level status from {url}: not a JSON object")
        return document

    return fetch

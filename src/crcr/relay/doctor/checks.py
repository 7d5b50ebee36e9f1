"""The doctor's checks: one answered question per line, and what to do about a failing one.

Everything comes from what the relay already keeps: the allowlist in force, GitHub's
answer about the App, and the audit trail (last dispatch, last callback and its issuer,
check runs created). A callback refused before its token was verified is kept apart
(`entries.UNAUTHENTICATED`); the doctor reads it too, for the ones that claimed this repo.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from crcr.config.settings import Settings
from crcr.github.errors import GitHubError
from crcr.hud.levels.providers import Standing
from crcr.hud.levels.status import LevelStatusService
from crcr.relay.allowlist.model import Allowlist, AllowlistEntry, Level
from crcr.relay.allowlist.source import AllowlistUnavailable
from crcr.relay.audit.entries import (
    CALLBACK,
    CHECK_RUN,
    DISPATCH,
    NOT_ALLOWLISTED,
    REFUSED,
    UNAUTHENTICATED,
)
from crcr.relay.doctor.github_app import AppLookups
from crcr.stores.roles import AuditLog

REPORT_STEP = (
    "the downstream workflow must run on repository_dispatch and report with the"
    " crcr-report action, with `permissions: id-token: write` (docs/downstream-onboarding.md)"
)


@dataclass(frozen=True)
class Check:
    """One line of the doctor's answer."""

    name: str
    ok: bool
    answer: str
    next_step: str | None = None


@dataclass(frozen=True)
class Subject:
    """What the checks are about, and where to read it."""

    repo: str
    settings: Settings
    store: AuditLog
    allowlist: Callable[[], Awaitable[Allowlist]]
    allowlist_source: str
    app: AppLookups | None
    app_problem: str | None = None
    web_url: str = "https://github.com"
    # The level status as `crcr serve` composes it (SPEC §10.2: one source).
    levels: Callable[[], AbstractAsyncContextManager[LevelStatusService]] | None = None


async def diagnose(subject: Subject) -> list[Check]:
    """Every check, in SPEC §12's order."""
    entry, allowlist_check = await _allowlist(subject)
    level_check = await _level(subject, entry)
    installed = await _installed(subject)
    trail = await _trail(subject)
    callback_check, issuer_check = _callback_and_issuer(subject, trail)
    return [
        allowlist_check,
        level_check,
        installed,
        _last_dispatch(subject, trail),
        callback_check,
        issuer_check,
        _check_runs(entry, trail),
    ]


async def _allowlist(subject: Subject) -> tuple[AllowlistEntry | None, Check]:
    name = "allowlist entry"
    try:
        entry = (await subject.allowlist()).entry(subject.repo)
    except AllowlistUnavailable as exc:
        return None, Check(name, False, f"unreadable: {exc}", "fix CRCR_ALLOWLIST")
    if entry is None:
        step = (
            f"ask the maintainers of {subject.settings.upstream_repo} to add {subject.repo} to"
            f" the allowlist; every relay instance follows within seconds of the merge"
        )
        return None, Check(name, False, f"not in {subject.allowlist_source}", step)
    extra = f", device {entry.device}" if entry.device else ""
    if entry.oncalls:
        extra += f", oncalls {', '.join(entry.oncalls)}"
    answer = f"{entry.level} as {entry.repo}{extra} (from {subject.allowlist_source})"
    return entry, Check(name, True, answer)


async def _level(subject: Subject, entry: AllowlistEntry | None) -> Check:
    """The level new jobs are treated at, and why: demotion, decline, override (§10.2)."""
    name = "level"
    if entry is None:
        return Check(name, True, "not allowlisted")
    answer = str(entry.level)
    if entry.level == Level.L4 and entry.device:
        answer += f", device {entry.device} (its label ciflow/crcr/{entry.device} if demoted)"
    if subject.levels is None:
        return Check(name, True, answer)
    async with subject.levels() as service:
        standing = await service.standing(entry.repo)
    if standing is None:
        return Check(name, True, answer)
    return standing_check(subject, answer, standing)


def standing_check(subject: Subject, answer: str, standing: Standing) -> Check:
    """The level line from the backend's standing; a demotion never proposed fails it."""
    name = "level"
    if standing.lowered:
        answer += f"; new jobs treated as {standing.treated_as}"
    if standing.override is not None:
        override = standing.override
        answer += (
            f"; override to {override.level} until {override.until:%Y-%m-%d %H:%MZ}"
            f" by {override.by}: {override.reason}"
        )
    if standing.declined is not None:
        declined = standing.declined
        answer += (
            f"; demotion declined by {declined.by}, none until {declined.until:%Y-%m-%d %H:%MZ}"
        )
    demotion = standing.demotion
    if demotion is None:
        return Check(name, True, answer)
    answer += f"; temporarily demoted since {demotion.since:%Y-%m-%d %H:%MZ}"
    if demotion.pr_url:
        return Check(name, True, f"{answer}, pull request {demotion.pr_url}")
    # A demotion whose pull request never opens is stuck: people are never asked.
    interval = subject.settings.levels_sync_interval or 3600
    if datetime.now(UTC) - demotion.since < timedelta(seconds=2 * interval):
        return Check(name, True, f"{answer}, pull request not opened yet")
    step = "run `crcr levels sync`: it says why the pull request was not opened"
    return Check(name, False, f"{answer}, pull request still not opened", step)


async def _installed(subject: Subject) -> Check:
    name = "App installed"
    if subject.app is None:
        step = "set the App's settings: CRCR_GITHUB_APP_ID, CRCR_GITHUB_APP_PRIVATE_KEY"
        return Check(name, False, f"cannot ask GitHub: {subject.app_problem}", step)
    try:
        installation = await subject.app.installation(subject.repo)
    except GitHubError as exc:
        return Check(name, False, f"GitHub could not be asked: {exc}", "try again later")
    if installation is not None:
        account = (installation.get("account") or {}).get("login", "?")
        return Check(name, True, f"yes, installation {installation.get('id')} ({account})")
    try:
        link = f"{subject.web_url}/apps/{await subject.app.slug()}/installations/new"
    except GitHubError as exc:
        link = f"the App's page on GitHub (its slug could not be read: {exc})"
    return Check(name, False, "no", f"install the App on {subject.repo}: {link}")


async def _trail(subject: Subject) -> list[dict[str, Any]]:
    """The repo's audit trail, plus unverified callbacks that claimed to be from it."""
    limit = subject.settings.audit_max_per_repo
    own = await subject.store.audit_entries(subject.repo, limit=limit)
    strangers = await subject.store.audit_entries(UNAUTHENTICATED, limit=limit)
    unlisted = await subject.store.audit_entries(NOT_ALLOWLISTED, limit=limit)
    claimed = [
        e
        for e in [*strangers, *unlisted]
        if str(e.get("claimed_repo") or e.get("repo") or "").lower() == subject.repo.lower()
    ]
    return sorted([*own, *claimed], key=lambda e: -float(e["at"]))


def _newest(trail: Sequence[dict[str, Any]], kind: str) -> dict[str, Any] | None:
    return next((e for e in trail if e.get("kind") == kind), None)


def _when(entry: dict[str, Any]) -> str:
    at = float(entry["at"])
    moment = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    return f"{moment} ({_age(time.time() - at)} ago)"


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit}"
    return f"{max(0, int(seconds))} s"


def _last_dispatch(subject: Subject, trail: Sequence[dict[str, Any]]) -> Check:
    name = "last dispatch"
    last = _newest(trail, DISPATCH)
    if last is None:
        days = subject.settings.audit_days
        step = f"send one: `crcr dispatch --repo {subject.repo} --pr N`, or open a PR upstream"
        return Check(name, False, f"none in the last {days} days", step)
    answer = f"{_when(last)}: {last['decision']} (delivery {last.get('delivery_id')})"
    if last["decision"] == "sent":
        return Check(name, True, answer)
    reason = str(last.get("reason") or "")
    step = "wait: it is retried" if last["decision"] == "queued" else f"GitHub said: {reason}"
    if "404" in reason or "Not Found" in reason:
        step = "the App must be installed on the repository (see App installed)"
    return Check(name, False, f"{answer}: {reason}" if reason else answer, step)


def _callback_and_issuer(subject: Subject, trail: Sequence[dict[str, Any]]) -> tuple[Check, Check]:
    last = _newest(trail, CALLBACK)
    if last is None:
        return (
            Check("last callback", False, "none received", REPORT_STEP),
            Check("OIDC issuer", False, "unknown: no callback yet", REPORT_STEP),
        )
    delivery = f"delivery {last.get('delivery_id') or '?'}"
    if last["decision"] != REFUSED:
        reported = f"{last.get('reported')}, " if last.get("reported") else ""
        callback = Check(
            "last callback", True, f"{_when(last)}: {last['decision']} ({reported}{delivery})"
        )
    else:
        answer = f"{_when(last)}: refused {last.get('status')}: {last.get('reason')} ({delivery})"
        if not last.get("verified", True):
            answer += ", token not verified"
        callback = Check("last callback", False, answer, _refusal_step(subject, last))
    return callback, _issuer(subject, trail)


def _refusal_step(subject: Subject, last: dict[str, Any]) -> str:
    status = last.get("status")
    if status == 401:
        return (
            f"the token was refused: the workflow must ask for audience"
            f" {subject.settings.oidc_audience!r} from a trusted issuer (CRCR_OIDC_ISSUERS)"
        )
    if status == 200:
        return "results count from L2: the allowlist entry must be at L2 or above"
    if status == 429:
        return "the repo sent too many callbacks (CRCR_RATE_LIMIT_PER_MIN); it may retry"
    if status == 400:
        return "the body must echo the dispatch's client_payload, as crcr-report does"
    return "see the reason; `crcr audit --repo REPO --refused` lists every refusal"


def _issuer(subject: Subject, trail: Sequence[dict[str, Any]]) -> Check:
    name = "OIDC issuer"
    known = next((e for e in trail if e.get("kind") == CALLBACK and e.get("issuer")), None)
    if known is None:
        return Check(name, False, "unknown: no callback named one", REPORT_STEP)
    issuer = str(known["issuer"])
    trusted = {i.issuer: i.kind for i in subject.settings.oidc_issuers}
    if issuer in trusted:
        return Check(name, True, f"{issuer} ({trusted[issuer]}, trusted)")
    step = f"add {issuer} to CRCR_OIDC_ISSUERS if this CI is to report"
    return Check(name, False, f"{issuer}, not trusted", step)


def _check_runs(entry: AllowlistEntry | None, trail: Sequence[dict[str, Any]]) -> Check:
    name = "L3/L4 check runs"
    if entry is None or entry.level < Level.L3:
        level = "not allowlisted" if entry is None else str(entry.level)
        return Check(name, True, f"not applicable ({level})")
    last = _newest(trail, CHECK_RUN)
    if last is not None:
        return Check(name, True, f"{_when(last)}: {last.get('check_name')} created")
    if entry.level == Level.L3:
        step = f"a PR labelled ciflow/crcr/{entry.device} gets them once a job reports"
    else:
        step = "every PR gets them once a job of it reports (see last callback)"
    return Check(name, False, "none created yet", step)

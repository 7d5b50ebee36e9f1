"""Tell people a bisection's verdict: the alert sinks, the alert log, the culprit's PR.

The alert is `kind: "culprit"` (SPEC §13's body, plus the culprit's SHA), queued once
per sink through the durable `alerts` queue like every alert, and kept in the alert log
(`GET /api/crcr/alerts`). With `CRCR_CULPRIT_COMMENT=true` a confirmed culprit's merged
upstream PR gets one comment naming the backend and mentioning its oncalls; the comment
is claimed in the state store first, so a leader that announces again after a restart
never comments twice. Every downstream-chosen text is escaped as the oncall comment's.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol
from urllib.parse import quote

from crcr.github.client import GitHubClient
from crcr.relay.alerts.metrics import ALERTS
from crcr.relay.alerts.sinks import AlertSinks, queue_alert
from crcr.relay.alerts.watch import ALERT_LOG
from crcr.relay.allowlist.model import Allowlist
from crcr.relay.checks.github_text import code, commit_text, link, mentions
from crcr.relay.culprits.record import Bisection, Verdict
from crcr.stores.roles import AuditLog, Idempotency, RetryQueue

log = logging.getLogger(__name__)

CULPRIT = "culprit"
COMMENT_CLAIM = "culprits:comment:"
CLAIM_SECONDS = 90 * 86400


class AnnounceStore(RetryQueue, AuditLog, Idempotency, Protocol):
    """The state store's roles an announcement uses."""


def culprit_alert(bisection: Bisection, url: str | None) -> dict[str, Any]:
    """The alert body: SPEC §13's keys (`from` running, `to` the verdict) and the culprit."""
    at = datetime.fromtimestamp(bisection.ended_at or bisection.started_at, UTC)
    return {
        "kind": CULPRIT,
        "repo": bisection.repo,
        "from": str(Verdict.RUNNING),
        "to": str(bisection.verdict),
        "at": at.isoformat().replace("+00:00", "Z"),
        "url": url,
        "culprit": bisection.culprit,
    }


def culprit_comment(
    bisection: Bisection, oncalls: tuple[str, ...], page_url: str | None, upstream: str
) -> str:
    """The PR comment: which backend this commit broke, how it was found, who to ask."""
    who = mentions(oncalls)
    found = (
        f"{len(bisection.steps)} dispatch(es) over {len(bisection.commits)} commit(s) "
        f"between {commit_text(bisection.good)} and {commit_text(bisection.bad)}"
    )
    lines = [
        f"<!-- crcr-culprit:{bisection.key} -->",
        f"**crcr**: bisecting the backend {code(bisection.repo)} names "
        f"{commit_text(bisection.culprit or '')} of {code(upstream)} as the first commit "
        f"that fails there (confirmed by a re-test; {found}).",
    ]
    if who:
        lines.append(f"Its oncalls: {who}.")
    lines.append(link("Details on the HUD", page_url))
    return "\n\n".join(lines)


@dataclass
class Announcer:
    """Announce a verdict once: the alert (queued per sink) and, if asked, the PR comment."""

    store: AnnounceStore
    sinks: AlertSinks
    github: GitHubClient
    allowlist: Callable[[], Awaitable[Allowlist]]
    upstream_repo: str
    link_base: str | None
    comment: bool
    keep_days: int
    keep_entries: int

    def page_url(self, repo: str) -> str | None:
        """The backend page, where the verdict is shown."""
        return None if self.link_base is None else f"{self.link_base}/crcr/{quote(repo)}"

    async def announce(self, bisection: Bisection) -> None:
        """Queue the alert, log it, and comment on the culprit's PR when that is asked."""
        body = culprit_alert(bisection, self.page_url(bisection.repo))
        alert_id = hashlib.sha256(f"culprit\x1f{bisection.key}".encode()).hexdigest()[:32]
        await queue_alert(self.store, self.sinks, alert_id, body)
        at = bisection.ended_at or bisection.started_at
        entry = {"bucket": ALERT_LOG, "kind": "alert", "at": at}
        await self.store.append_audit(
            [{**entry, "alert": body}],
            keep_seconds=self.keep_days * 86400.0,
            keep_per_repo=self.keep_entries,
        )
        ALERTS.labels(kind=CULPRIT, to=str(bisection.verdict)).inc()
        log.info(
            "culprit search for %s ended %s: %s",
            bisection.repo,
            bisection.verdict,
            bisection.culprit or bisection.reason,
            extra={"repo": bisection.repo},
        )
        if self.comment and bisection.verdict is Verdict.CONFIRMED:
            await self._comment(bisection)

    async def _comment(self, bisection: Bisection) -> None:
        commit = bisection.culprit_commit
        number = commit.pr_number if commit is not None else None
        if number is None:
            log.info("culprit %s names no merged pull request: no comment", bisection.culprit)
            return
        if not await self.store.claim_once(f"{COMMENT_CLAIM}{bisection.key}", CLAIM_SECONDS):
            return
        oncalls = (await self.allowlist()).oncalls(bisection.repo)
        text = culprit_comment(
            bisection, oncalls, self.page_url(bisection.repo), self.upstream_repo
        )
        await self.github.create_issue_comment(self.upstream_repo, number, text)

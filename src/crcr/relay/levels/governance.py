"""Saying no to a demotion, and downgrading a backend by hand (SPEC §10.2).

**Declines.** A demotion pull request closed without merging declines the demotion: it
ends at once (every instance reads the store within `CACHE_SECONDS`), and the backend
is not demoted again, nor is a demotion pull request opened for it, for
`CRCR_DEMOTION_SNOOZE`. Only a person's close counts: crcr closes a recovered
backend's pull request itself, after the demotion has ended, and as a bot.

**Overrides** (RFC-0050's temporary downgrade): an operator lowers a backend's level
until a given time; it beats the allowlist on every instance and ends by itself, or
with `crcr levels override --clear`.

Each is written to the audit trail (kind `level`) and is an episode of the level history.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from crcr.relay.allowlist.model import Allowlist, Level
from crcr.relay.audit.entries import level_entry
from crcr.relay.levels.book import DemotionBook
from crcr.relay.levels.proposals import branch_for
from crcr.relay.levels.standing import DECLINE, OVERRIDE, Decline, Episode, Override

log = logging.getLogger(__name__)

DEMOTION_BRANCH = branch_for("", demotion=True)
OVERRIDE_LEVELS = (Level.L2, Level.L3)
"""What an override may set: no check runs (L2), or non-blocking ones (L3)."""

Record = Callable[[dict[str, Any]], None]
"""Where audit entries go (`AuditTrail.record`)."""


class OverrideRefused(ValueError):
    """The override cannot be set (the message says why)."""


class LevelGovernance:
    """Declines from closed pull requests, and overrides from the operator."""

    def __init__(
        self,
        book: DemotionBook,
        *,
        snooze_seconds: int,
        audit: Record | None = None,
        allowlist_repo: str | None = None,
    ) -> None:
        self._book = book
        self._snooze = timedelta(seconds=snooze_seconds)
        self._audit = audit
        self._allowlist_repo = allowlist_repo

    async def pull_request_seen(self, payload: Mapping[str, Any]) -> None:
        """The webhook's hook: a demotion pull request closed unmerged by a person declines."""
        pull = payload.get("pull_request")
        if payload.get("action") != "closed" or not isinstance(pull, Mapping):
            return
        branch = str((pull.get("head") or {}).get("ref") or "")
        where = str((payload.get("repository") or {}).get("full_name") or "")
        sender = payload.get("sender") or {}
        if (
            pull.get("merged")
            or not branch.startswith(DEMOTION_BRANCH)
            or self._allowlist_repo is None
            or where.lower() != self._allowlist_repo.lower()
            or sender.get("type") == "Bot"
        ):
            return
        repo = branch.removeprefix(DEMOTION_BRANCH)
        await self.decline(repo, str(sender.get("login") or "unknown"), pull.get("html_url"))

    async def decline(self, repo: str, by: str, pr_url: str | None = None) -> Decline | None:
        """Decline `repo`'s demotion now; None when it has none to decline."""
        now = self._book.now()
        demotion = (await self._book.governance()).demotions.get(repo.lower())
        if demotion is None:
            return None
        decline = Decline(demotion.repo, by, now, now + self._snooze, pr_url or demotion.pr_url)
        await self._book.put(DECLINE, decline.repo, decline.to_store())
        await self._book.end_demotion(decline.repo, now)
        detail = f"declined by {by}"
        await self._book.history.record(
            Episode(decline.repo, "decline", now, decline.until, detail)
        )
        until = decline.until.isoformat()
        log.info("demotion of %s declined by %s: none again until %s", decline.repo, by, until)
        self._record(decline.repo, "declined", f"no demotion until {until}", by)
        return decline

    async def set_override(
        self,
        allowlist: Allowlist,
        repo: str,
        level: Level,
        duration: timedelta,
        reason: str,
        by: str,
    ) -> Override:
        """Downgrade `repo` to `level` for `duration`; `OverrideRefused` says why not."""
        entry = allowlist.entry(repo)
        if entry is None:
            raise OverrideRefused(f"{repo} is not in the allowlist")
        if level not in OVERRIDE_LEVELS:
            raise OverrideRefused("an override sets L2 (no check runs) or L3 (non-blocking)")
        if level >= entry.level:
            raise OverrideRefused(f"{entry.repo} is at {entry.level}: an override only lowers")
        if duration <= timedelta(0):
            raise OverrideRefused("the override must last a while (--for 3d)")
        if not reason.strip():
            raise OverrideRefused("say why (--reason): it is shown wherever the level is")
        now = self._book.now()
        await self._close_override(entry.repo, now)
        override = Override(entry.repo, level, now + duration, reason.strip(), by, now)
        await self._book.put(OVERRIDE, override.repo, override.to_store())
        detail = f"{entry.level} → {level}: {override.reason} (by {by})"
        await self._book.history.record(
            Episode(entry.repo, "override", now, override.until, detail)
        )
        until = override.until.isoformat()
        self._record(entry.repo, "override set", f"{level} until {until}: {override.reason}", by)
        return override

    async def clear_override(self, repo: str, by: str) -> bool:
        """End `repo`'s override now; False if it had none in force."""
        now = self._book.now()
        found = (await self._book.governance()).override(repo, now)
        if found is None:
            return False
        await self._close_override(found.repo, now)
        await self._book.remove(OVERRIDE, found.repo)
        self._record(found.repo, "override cleared", f"was {found.level}: {found.reason}", by)
        return True

    async def _close_override(self, repo: str, now: datetime) -> None:
        """End the episode of an override still in force (replaced or cleared)."""
        found = (await self._book.governance()).override(repo, now)
        if found is not None:
            episodes = (await self._book.history.episodes()).get(repo.lower(), ())
            for episode in episodes:
                if episode.kind == "override" and episode.start == found.at:
                    closed = Episode(episode.repo, "override", episode.start, now, episode.detail)
                    await self._book.history.record(closed)

    def _record(self, repo: str, decision: str, reason: str, by: str) -> None:
        if self._audit is not None:
            self._audit(level_entry(repo, decision, reason, by))

"""Level changes as pull requests on the upstream allowlist (SPEC §10.1, `crcr levels sync`).

For every backend whose verdict is `demote` (and, when asked, every ready L2 backend)
there is one pull request from `crcr-demotion/<owner>/<repo>` (`crcr-promotion/…`) that
moves only its entry; a backend that recovered has its pull request closed with a
comment and its branch deleted. Running it again changes nothing: an open pull request
is rewritten only when its file, title or body would differ. Merging is for people.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from crcr.github.pull_requests import PullRequests
from crcr.relay.allowlist.location import GitHubBlobLocation
from crcr.relay.allowlist.model import Allowlist, Level
from crcr.relay.levels.abandoned import AbandonedSource, abandonment_proposals
from crcr.relay.levels.allowlist_edit import AllowlistEditError, move_entry
from crcr.relay.levels.book import DemotionBook
from crcr.relay.levels.proposals import Proposal, criteria_table
from crcr.relay.levels.status import BackendStatus

log = logging.getLogger(__name__)

BRANCH_PREFIXES = ("crcr-demotion/", "crcr-promotion/")


@dataclass
class SyncReport:
    """What one sync did, one repo per entry, for the operator."""

    opened: list[str] = field(default_factory=list)
    refreshed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    closed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    snoozed: list[str] = field(default_factory=list)  # declined: no pull request until…

    @property
    def changed(self) -> bool:
        """Whether anything on GitHub was written."""
        return bool(self.opened or self.refreshed or self.closed)


def proposals_for(
    statuses: Mapping[str, BackendStatus],
    allowlist: Allowlist,
    *,
    promotions: bool,
    device: str | None,
    report: SyncReport,
) -> dict[str, Proposal]:
    """The level changes to propose, by branch; what cannot be proposed goes to `skipped`."""
    wanted: dict[str, Proposal] = {}
    for status in statuses.values():
        entry = allowlist.entry(status.repo)
        if entry is None or status.no_data:
            continue
        if status.change == "demote" and entry.level in (Level.L3, Level.L4):
            to_level = Level(entry.level - 1)
        elif promotions and status.change == "promote" and entry.level == Level.L2:
            to_level = Level.L3
        else:
            continue
        # A demoted L4 entry goes under its own device (SPEC §10.2); a promoted L2 one
        # under the device the operator names.
        target = entry.device if entry.level == Level.L4 else device
        if to_level == Level.L3 and not target:
            report.skipped.append(f"{entry.repo}: moving it to L3 needs a device (--device)")
            continue
        proposal = Proposal(entry.repo, entry.level, to_level, entry.oncalls, status, target)
        wanted[proposal.branch] = proposal
    return wanted


class LevelSync:
    """Opens, refreshes and closes the allowlist's level-change pull requests."""

    def __init__(
        self, pulls: PullRequests, location: GitHubBlobLocation, book: DemotionBook | None
    ) -> None:
        self._pulls = pulls
        self._location = location
        self._book = book
        self.abandoned: AbandonedSource | None = None
        """Backends stale for 28 days (SPEC §13), proposed for L1; None: not judged."""

    async def run(
        self,
        statuses: Mapping[str, BackendStatus],
        allowlist: Allowlist,
        *,
        promotions: bool = False,
        device: str | None = None,
    ) -> SyncReport:
        """One idempotent pass over every verdict and every open crcr pull request."""
        report = SyncReport()
        wanted = proposals_for(
            statuses, allowlist, promotions=promotions, device=device, report=report
        )
        if self.abandoned is not None:  # silence beats criteria: one branch per backend
            now, found = await self.abandoned()
            for abandoned in abandonment_proposals(now, found, allowlist, statuses):
                wanted[abandoned.branch] = abandoned
        if self._book is not None:  # a declined demotion is not proposed again (SPEC §10.2)
            governance, now = await self._book.governance(), self._book.now()
            for branch, proposal in list(wanted.items()):
                decline = governance.declined(proposal.repo, now)
                if proposal.demotion and decline is not None:
                    report.snoozed.append(f"{proposal.repo} until {decline.until.isoformat()}")
                    del wanted[branch]
        open_pulls = {
            pull["head"]["ref"]: pull
            for pull in await self._pulls.open_pulls()
            if str(pull["head"]["ref"]).startswith(BRANCH_PREFIXES)
            and (pull["head"].get("repo") or {}).get("full_name", "").lower()
            == self._pulls.repo.lower()
        }
        base = await self._pulls.read_file(self._location.path, self._location.ref)
        for branch, proposal in wanted.items():
            try:
                edited = move_entry(base.text, proposal.repo, proposal.to_level, proposal.device)
            except AllowlistEditError as exc:
                report.skipped.append(f"{proposal.repo}: {exc}")
                continue
            if edited == base.text:
                continue
            pull = open_pulls.get(branch)
            if pull is None:
                pull = await self._open(proposal, edited, base.sha)
                report.opened.append(proposal.repo)
            elif await self._refresh(proposal, pull, edited, base.sha):
                report.refreshed.append(proposal.repo)
            else:
                report.unchanged.append(proposal.repo)
            if proposal.demotion and self._book is not None:
                await self._book.record_pull_request(proposal.repo, pull.get("html_url"))
        for branch, pull in open_pulls.items():
            if branch in wanted:
                continue
            why = _obsolete(branch, allowlist) or self._recovered(branch, statuses, promotions)
            if why:
                await self._close(branch, pull, why, statuses)
                report.closed.append(branch.split("/", 1)[1])
        return report

    async def _commit(self, proposal: Proposal, edited: str, blob_sha: str) -> None:
        """Put the branch at the base's head plus one commit with the edited file."""
        head = await self._pulls.branch_head(self._location.ref)
        if head is None:
            raise AllowlistEditError(f"the allowlist's branch {self._location.ref} is gone")
        if await self._pulls.branch_head(proposal.branch) is None:
            await self._pulls.create_branch(proposal.branch, head)
        else:
            await self._pulls.reset_branch(proposal.branch, head)
        await self._pulls.write_file(
            self._location.path,
            proposal.branch,
            edited,
            sha=blob_sha,
            message=proposal.commit_message,
        )

    async def _open(self, proposal: Proposal, edited: str, blob_sha: str) -> dict[str, Any]:
        await self._commit(proposal, edited, blob_sha)
        pull = await self._pulls.create_pull(
            proposal.branch, self._location.ref, proposal.title, proposal.body()
        )
        await self._pulls.add_label(int(pull["number"]), proposal.label)
        log.info("opened %s: %s", pull.get("html_url"), proposal.title)
        return pull

    async def _refresh(
        self, proposal: Proposal, pull: Mapping[str, Any], edited: str, blob_sha: str
    ) -> bool:
        """Bring an open pull request up to date; False when it already was."""
        changed = False
        on_branch = await self._pulls.read_file(self._location.path, proposal.branch)
        if on_branch.text != edited:
            await self._commit(proposal, edited, blob_sha)
            changed = True
        body = proposal.body()
        if pull.get("title") != proposal.title or pull.get("body") != body:
            await self._pulls.update_pull(int(pull["number"]), title=proposal.title, body=body)
            changed = True
        return changed

    @staticmethod
    def _recovered(
        branch: str, statuses: Mapping[str, BackendStatus], promotions: bool
    ) -> str | None:
        """Why the verdict that opened this branch's pull request no longer holds, if so."""
        demotion = branch.startswith(BRANCH_PREFIXES[0])
        if not demotion and not promotions:
            return None  # promotions are looked at only when asked for
        status = statuses.get(_repo_of(branch).lower())
        if status is None or status.no_data:
            return None  # no verdict proves nothing either way
        if status.change == ("demote" if demotion else "promote"):
            return None
        return "meets its level criteria again" if demotion else "no longer meets every criterion"

    async def _close(
        self,
        branch: str,
        pull: Mapping[str, Any],
        why: str,
        statuses: Mapping[str, BackendStatus],
    ) -> None:
        repo = _repo_of(branch)
        lines = [f"`{repo}` {why}, so crcr closes this pull request.", ""]
        status = statuses.get(repo.lower())
        if status is not None:
            lines += criteria_table(status.criteria)
        number = int(pull["number"])
        await self._pulls.comment(number, "\n".join(lines) + "\n")
        await self._pulls.update_pull(number, state="closed")
        await self._pulls.delete_branch(branch)
        log.info("closed %s: %s %s", pull.get("html_url"), repo, why)


def _repo_of(branch: str) -> str:
    return branch.split("/", 1)[1]


def _obsolete(branch: str, allowlist: Allowlist) -> str | None:
    """Why the change this branch proposes no longer applies to the allowlist, if so.

    The entry was removed, or moved by another change: merging the pull request would
    bring back what a maintainer took out.
    """
    entry = allowlist.entry(_repo_of(branch))
    if entry is None:
        return "is no longer on the allowlist"
    if branch.startswith(BRANCH_PREFIXES[0]) and entry.level not in (Level.L3, Level.L4):
        return f"is at {entry.level} now"
    if branch.startswith(BRANCH_PREFIXES[1]) and entry.level != Level.L2:
        return f"is at {entry.level} now"
    return None

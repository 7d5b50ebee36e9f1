"""Tell a backend's oncalls that its L3/L4 checks fail on a PR: one comment, kept current.

One comment per (pull request, downstream repo), edited in place as jobs fail and
recover: the table lists the jobs failing on the newest commit reported, one row per
job (check name) as its latest run left it, and once none fail it says so, with when.
Only a failed check run posts the comment; every finished job of the backend edits it
afterwards, whatever the backend's level is by then (a demotion, SPEC §10.2), so it
never goes on listing failures that have passed since. GitHub notifies the people an
issue comment mentions when it is created, not when it is edited, so the oncalls hear
about a PR once however many of its jobs fail afterwards.

Exactly one comment, however many sweepers and instances handle the "oncall" queue at
once, even the same item: the first comment is claimed in the state store before it is
posted (`claim_lease`), and its id settled there once posted; every other worker waits
for the id and edits that comment. A claimant that dies between claiming and settling
is replaced when its lease ends, and its successor first looks for a comment already
posted, by its hidden marker, before posting one.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from crcr.github.client import GitHubClient
from crcr.github.errors import GitHubNotFound, GitHubUnprocessable
from crcr.relay.allowlist.model import Allowlist
from crcr.relay.checks.check_runs import (
    FAILING_CONCLUSIONS,
    TERMINAL_STATES,
    CheckReport,
    latest_per_check,
    report_from_job,
)
from crcr.relay.checks.github_text import code, commit_text, link, mentions, run_id_text
from crcr.relay.jobs.events import ClaimRead
from crcr.relay.jobs.job import Job
from crcr.relay.jobs.queue_handler import HandlerResult
from crcr.stores.roles import JobSummaries, LeaseClaims, PullHeads, RetryQueue
from crcr.stores.roles.pull_heads import pull_key
from crcr.stores.state import ClaimRef, LeasedItem


class OncallStore(LeaseClaims, JobSummaries, PullHeads, RetryQueue, Protocol):
    """The state store's roles this module uses."""


log = logging.getLogger(__name__)

ONCALL_QUEUE = "oncall"
COMMENT_CLAIMS = "oncall-comment"
"""`claim_lease` name: (upstream PR, downstream repo) → the id of its one comment."""
CLAIM_LEASE = 120.0
"""Seconds a worker holds the right to post the first comment: far beyond one GitHub
call with its retries, so a live holder is never replaced, and a dead one within two
minutes (the sweeper's own lease on queue items)."""


def oncall_marker(repo: str) -> str:
    """The hidden line that identifies a repo's comment on a PR."""
    return f"<!-- crcr-oncall:{repo} -->"


@dataclass(frozen=True)
class FailingJob:
    """One row of the comment."""

    check_name: str
    conclusion: str
    run_id: str
    run_url: str | None


def failing_jobs(summaries: Mapping[str, Mapping[str, Any]]) -> list[FailingJob]:
    """The failing jobs among job summaries: one row per job (check name), as its latest
    run left it, so a job that failed and then passed is no longer failing (SPEC §10.2,
    invariant 2)."""
    latest = (summaries[key] for key in latest_per_check(summaries).values())
    rows = [
        FailingJob(
            str(summary["name"]),
            str(summary["conclusion"]),
            str(summary.get("run_id")),
            summary.get("run_url"),
        )
        for summary in latest
        if summary.get("conclusion") in FAILING_CONCLUSIONS
    ]
    return sorted(rows, key=lambda row: row.check_name)


def render_comment(
    repo: str, oncalls: Sequence[str], head_sha: str, jobs: Iterable[FailingJob]
) -> str:
    """The comment's Markdown, marker first.

    Mentions come only from the allowlist's oncalls; every value a downstream chose
    (check names, run ids, links) goes through `github_text`, so nothing it sends can
    notify anyone, start a heading or embed an image.
    """
    told = mentions(oncalls)
    lines = [
        oncall_marker(repo),
        f"### crcr: {code(repo)} has failing checks",
        "",
        f"{told + ': ' if told else ''}{code(repo)} reported failing jobs on this pull request "
        f"(commit {commit_text(head_sha)}).",
        "",
        "| Check | Conclusion | Run |",
        "| --- | --- | --- |",
    ]
    for job in jobs:
        run = link(f"run {run_id_text(job.run_id)}", job.run_url)
        # The conclusion is one of FAILING_CONCLUSIONS (`failing_jobs` keeps no other).
        lines.append(f"| {code(job.check_name)} | {job.conclusion} | {run} |")
    lines += ["", "_This comment is updated in place as jobs fail and recover._"]
    return "\n".join(lines)


def render_recovered(repo: str, head_sha: str, at: float) -> str:
    """The comment once no job fails any more: says so, and since when (UTC)."""
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at))
    return "\n".join(
        [
            oncall_marker(repo),
            f"### crcr: {code(repo)} checks pass again",
            "",
            f"No job of {code(repo)} fails on this pull request any more "
            f"(commit {commit_text(head_sha)}, as of {when}).",
            "",
            "_This comment is updated in place as jobs fail and recover._",
        ]
    )


def comment_key(upstream: str, number: int, repo: str) -> str:
    """The claim of one (upstream PR, downstream repo) comment."""
    return f"{upstream.lower()}#{int(number)}:{repo.lower()}"


def find_comment(
    comments: Iterable[Mapping[str, Any]], repo: str, login: str
) -> Mapping[str, Any] | None:
    """Our comment for `repo`: one by our App's bot account (`login`) starting with the marker.

    Anyone can paste the marker into a comment, and any bot (another App, a workflow's
    `github-actions[bot]`) can post it first: taking theirs would leave the oncalls
    untold, so only the App's own account counts.
    """
    marker = oncall_marker(repo)
    for comment in comments:
        user = comment.get("user") or {}
        author = str(user.get("login") or "")
        if (
            str(comment.get("body") or "").startswith(marker)
            and user.get("type") == "Bot"
            and author.lower() == login.lower()
        ):
            return comment
    return None


class OncallNotifier:
    """Queues and writes oncall comments on the upstream PR."""

    def __init__(
        self,
        store: OncallStore,
        github: GitHubClient,
        allowlist: Callable[[], Awaitable[Allowlist]],
        upstream_repo: str,
        *,
        ttl: int,
        max_retries: int = 1,
    ) -> None:
        self._store = store
        self._github = github
        self._allowlist = allowlist
        self._upstream = upstream_repo
        self._max_retries = max_retries
        self._ttl = ttl
        self._login: str | None = None
        self.snoozed: Callable[[int, str], Awaitable[bool]] | None = None
        """Whether a backend's comment on a PR is snoozed (SPEC §15; set at wiring)."""

    async def _own_login(self) -> str:
        """The App's bot account, asked once (`GET /app`): the author of our comments."""
        if self._login is None:
            self._login = f"{(await self._github.app())['slug']}[bot]"
        return self._login

    async def notify(self, report: CheckReport, summary_repo: str, cause: str) -> None:
        """Queue a comment update for the failing `report` (`cause`: its check item id).

        One item per failing check run, so an update that is in flight never swallows
        a newer failure; each item renders every failing job there is by then.
        """
        if report.pr_number is not None:
            await self._queue(report, summary_repo, cause, recovered=False)

    async def update(
        self, report: CheckReport, summary_repo: str, cause: str, seen: ClaimRead | None = None
    ) -> None:
        """Queue an edit of the comment for a finished job, if the comment can change.

        For a job that did not fail, or one that got no check run (its backend demoted,
        or below L3 by now): the comment shows the latest state of the backend's jobs
        whatever its level is (SPEC §10.2, invariant 2). It can change when the PR has a
        comment, or when a job of this commit failed (a first comment may be being
        posted right now); otherwise, the usual case, nothing is queued. Such an item
        edits the comment and never posts the first one: only a failed check run tells
        the oncalls. `seen`: the comment's claim as the job's transition read it.
        """
        if report.pr_number is None or report.state not in TERMINAL_STATES:
            return
        if not await self.has_comment(report.pr_number, summary_repo, seen):
            summaries = await self._store.job_summaries(report.head_sha, summary_repo)
            if not any(s.get("conclusion") in FAILING_CONCLUSIONS for s in summaries.values()):
                return
        await self._queue(report, summary_repo, cause, recovered=True)

    async def follow_below_l3(self, job: Job, seen: ClaimRead | None = None) -> None:
        """Keep the comment current for a finished PR job recorded below L3 (SPEC §10.2).

        Its backend was L3/L4 when the comment was posted and is lower now (a merged
        demotion): the comment still shows its jobs' latest state. The job summaries of
        L2 jobs are kept only then, so a backend without a comment costs one store read,
        or none when the job's transition read it (`seen`); the job's check report is
        built only for a backend with a comment (every finished L2 PR job asks).
        """
        pr_number = job.dispatch.context.pr_number or None
        if pr_number is None or job.state not in TERMINAL_STATES:
            return
        entry = (await self._allowlist()).entry(job.verified_repo)
        # How summaries are keyed: the allowlist's spelling.
        repo = entry.repo if entry is not None else job.verified_repo
        if not await self.has_comment(pr_number, repo, seen):
            return
        report = report_from_job(job)
        summary = report.to_summary()
        await self._store.put_job_summary(report.head_sha, repo, report.job_key, summary, self._ttl)
        await self._queue(report, repo, f"{report.job_key}:{report.state}:below-l3", recovered=True)

    def claim_of(self, pr_number: int, repo: str) -> ClaimRef:
        """The claim that holds the id of `repo`'s comment on this PR, once posted."""
        return ClaimRef(COMMENT_CLAIMS, comment_key(self._upstream, pr_number, repo))

    async def has_comment(self, pr_number: int, repo: str, seen: ClaimRead | None = None) -> bool:
        """Whether the oncalls of `repo` were told about this PR (its comment was posted).

        `seen` answers without a store read when it is this claim: it was read from
        the store every instance shares, in the round trip of the transition that runs
        the hook, so a comment any instance posted before that is seen. (A read here
        would be later only by the HUD write; a comment posted in between is the race
        a comment posted just after that read always was.)
        """
        claim = self.claim_of(pr_number, repo)
        if seen is not None and seen.claim == claim:
            return seen.value is not None
        return await self._store.leased_value(claim.name, claim.key) is not None

    async def _queue(
        self, report: CheckReport, summary_repo: str, cause: str, *, recovered: bool
    ) -> None:
        payload = {
            "recovered": recovered,
            "repo": summary_repo,
            "head_sha": report.head_sha,
            "pr_number": report.pr_number,
            "job_key": report.job_key,
            "summary": report.to_summary(),
        }
        await self._store.enqueue(ONCALL_QUEUE, f"oncall:{cause}", payload)

    async def handle_item(self, item: LeasedItem) -> HandlerResult:
        """Bring the comment for one queued job up to date; safe on any number of workers."""
        payload = item.payload
        repo, head_sha = str(payload["repo"]), str(payload["head_sha"])
        number = int(payload["pr_number"])
        key = comment_key(self._upstream, number, repo)
        # No oncalls (the backend left the allowlist, or its oncalls did, after this item
        # was queued) post nothing, but a comment already posted is still brought up to
        # date: it must not go on listing a failure that has passed since (SPEC §10.2).
        oncalls = (await self._allowlist()).oncalls(repo)
        shown = await self._newest_head(number, repo, head_sha)
        summaries = await self._store.job_summaries(shown, repo)
        if shown == head_sha:
            # The job that queued this item counts as it finished even if a late
            # in_progress summary overwrote its own in the meantime.
            summaries[str(payload["job_key"])] = dict(payload["summary"])
        head_sha, jobs = shown, failing_jobs(summaries)
        if jobs:
            body = render_comment(repo, oncalls, head_sha, jobs)
        else:
            body = render_recovered(repo, head_sha, time.time())
        owner = uuid.uuid4().hex  # this attempt's alone, whoever else holds the item
        claim = await self._store.claim_lease(
            COMMENT_CLAIMS, key, owner, lease=CLAIM_LEASE, ttl=self._ttl
        )
        try:
            if claim.value is not None:
                await self._edit(number, int(claim.value), body)
            elif not claim.held:
                return HandlerResult.RETRY  # another worker is posting the first comment
            elif (
                not oncalls
                or not jobs
                or payload.get("recovered")
                or await self._is_snoozed(number, repo)
            ):
                # Nothing to tell (no comment, so nobody was told of failures), or nobody.
                await self._store.settle_lease(COMMENT_CLAIMS, key, owner, None, self._ttl)
            else:
                await self._post_first(key, owner, number, repo, body)
        except (GitHubNotFound, GitHubUnprocessable) as exc:
            log.error("oncall comment on %s#%s refused: %s", self._upstream, number, exc)
            return HandlerResult.DROP
        return HandlerResult.DONE

    async def _newest_head(self, number: int, repo: str, head_sha: str) -> str:
        """The commit the comment shows for an item of `head_sha`: that one, unless a
        newer head of the PR superseded it for this backend (SPEC §15).

        An item of the older commit handled after the newer one's (a superseded job's
        late edit, a retry) must not put the older commit's jobs back in the comment:
        the comment shows the backend's jobs on the newest commit it was sent.
        """
        heads = await self._store.pull_heads(pull_key(self._upstream, number))
        live = heads.live.get(repo)
        if live is None or head_sha not in heads.superseded:
            return head_sha
        return str(live.get("head_sha") or head_sha)

    async def _is_snoozed(self, number: int, repo: str) -> bool:
        return self.snoozed is not None and await self.snoozed(number, repo)

    async def _edit(self, number: int, comment_id: int, body: str) -> None:
        """Replace our comment's body; one someone deleted is not posted again."""
        try:
            await self._github.update_issue_comment(
                self._upstream, comment_id, body, max_retries=self._max_retries
            )
        except GitHubNotFound:
            log.info(
                "oncall comment %s on %s#%s was deleted; not posting it again",
                comment_id,
                self._upstream,
                number,
            )

    async def _post_first(self, key: str, owner: str, number: int, repo: str, body: str) -> None:
        """As the claim's holder: find a comment a dead holder posted, or post one; settle."""
        retries = self._max_retries
        try:
            comments = await self._github.list_issue_comments(
                self._upstream, number, max_retries=retries
            )
            existing = find_comment(comments, repo, await self._own_login())
            if existing is None:
                created = await self._github.create_issue_comment(
                    self._upstream, number, body, max_retries=retries
                )
                comment_id = int(created["id"])
            else:
                comment_id = int(existing["id"])
                if existing.get("body") != body:
                    await self._edit(number, comment_id, body)
        except BaseException:
            # Nothing was settled: let the retry (or another worker) claim at once.
            await self._store.settle_lease(COMMENT_CLAIMS, key, owner, None, self._ttl)
            raise
        settled = await self._store.settle_lease(
            COMMENT_CLAIMS, key, owner, str(comment_id), self._ttl
        )
        if settled != str(comment_id):
            # Only when a holder outlived its lease by minutes: say so, never hide it.
            log.warning(
                "a second oncall comment %s on %s#%s (the first is %s)",
                comment_id,
                self._upstream,
                number,
                settled,
                extra={"repo": repo},
            )

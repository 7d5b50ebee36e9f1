"""Tell a backend's oncalls that its L3/L4 checks fail on a PR: one comment, kept current.

One comment per (pull request, downstream repo), found again by a hidden marker and
edited in place. GitHub notifies the people an issue comment mentions when it is
created, not when it is edited, so the oncalls hear about a PR once however many of
its jobs fail afterwards.

Comment work runs only from the "oncall" queue, which one sweeper drains one item at a
time: two failing jobs of a matrix can never both find no comment and create two.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from crcr.github.client import GitHubClient
from crcr.github.errors import GitHubNotFound, GitHubUnprocessable
from crcr.relay.allowlist.model import Allowlist
from crcr.relay.checks.check_runs import FAILING_CONCLUSIONS, JobReport
from crcr.relay.checks.github_text import code, commit_text, link, mentions, run_id_text
from crcr.relay.sweeper.handlers import HandlerResult
from crcr.stores.state import LeasedItem, StateStore

log = logging.getLogger(__name__)

ONCALL_QUEUE = "oncall"


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
    """The failing jobs among job summaries, counting only each job's latest attempt.

    A job that failed and then passed on a re-run (a new `run_attempt`, so a new job
    key) is no longer failing.
    """
    latest: dict[tuple[str, str], Mapping[str, Any]] = {}
    for summary in summaries.values():
        key = (str(summary.get("name")), str(summary.get("run_id")))
        attempt = _attempt(summary)
        if key not in latest or attempt >= _attempt(latest[key]):
            latest[key] = summary
    rows = [
        FailingJob(name, str(summary["conclusion"]), run_id, summary.get("run_url"))
        for (name, run_id), summary in latest.items()
        if summary.get("conclusion") in FAILING_CONCLUSIONS
    ]
    return sorted(rows, key=lambda row: (row.check_name, row.run_id))


def _attempt(summary: Mapping[str, Any]) -> int:
    attempt = str(summary.get("run_attempt") or "1")
    return int(attempt) if attempt.isdigit() else 1


def render_comment(
    repo: str, oncalls: Sequence[str], head_sha: str, jobs: Iterable[FailingJob]
) -> str:
    """The comment's Markdown, marker first.

    Mentions come only from the allowlist's oncalls; every value a downstream chose
    (check names, run ids, links) goes through `github_text`, so nothing it sends can
    notify anyone, start a heading or embed an image.
    """
    lines = [
        oncall_marker(repo),
        f"### crcr: {code(repo)} has failing checks",
        "",
        f"{mentions(oncalls)}: {code(repo)} reported failing jobs on this pull request "
        f"(commit {commit_text(head_sha)}).",
        "",
        "| Check | Conclusion | Run |",
        "| --- | --- | --- |",
    ]
    for job in jobs:
        run = link(f"run {run_id_text(job.run_id)}", job.run_url)
        # The conclusion is one of FAILING_CONCLUSIONS (`failing_jobs` keeps no other).
        lines.append(f"| {code(job.check_name)} | {job.conclusion} | {run} |")
    lines += ["", "_This comment is updated in place when more jobs fail._"]
    return "\n".join(lines)


def find_comment(comments: Iterable[Mapping[str, Any]], repo: str) -> Mapping[str, Any] | None:
    """Our comment for `repo`: a bot's comment that starts with the marker.

    Anyone can paste the marker into a comment; only a bot account's comment (ours,
    since the App can edit no other bot's) is taken.
    """
    marker = oncall_marker(repo)
    for comment in comments:
        user = comment.get("user") or {}
        if str(comment.get("body") or "").startswith(marker) and user.get("type") == "Bot":
            return comment
    return None


class OncallNotifier:
    """Queues and writes oncall comments on the upstream PR."""

    def __init__(
        self,
        store: StateStore,
        github: GitHubClient,
        allowlist: Callable[[], Awaitable[Allowlist]],
        upstream_repo: str,
        *,
        max_retries: int = 1,
    ) -> None:
        self._store = store
        self._github = github
        self._allowlist = allowlist
        self._upstream = upstream_repo
        self._max_retries = max_retries

    async def notify(self, report: JobReport, summary_repo: str, cause: str) -> None:
        """Queue a comment update for the failing `report` (`cause`: its check item id).

        One item per failing check run, so an update that is in flight never swallows
        a newer failure; each item renders every failing job there is by then.
        """
        if report.pr_number is None:
            return
        payload = {
            "repo": summary_repo,
            "head_sha": report.head_sha,
            "pr_number": report.pr_number,
            "job_key": report.job_key,
            "summary": report.to_summary(),
        }
        await self._store.enqueue(ONCALL_QUEUE, f"oncall:{cause}", payload)

    async def handle_item(self, item: LeasedItem) -> HandlerResult:
        """Create or update the comment for one queued failure."""
        payload = item.payload
        repo, head_sha = str(payload["repo"]), str(payload["head_sha"])
        oncalls = (await self._allowlist()).oncalls(repo)
        if not oncalls:
            return HandlerResult.DONE
        summaries = await self._store.job_summaries(head_sha, repo)
        # The failure that queued this item counts even if a late in_progress summary
        # overwrote its own in the meantime.
        summaries[str(payload["job_key"])] = dict(payload["summary"])
        jobs = failing_jobs(summaries)
        if not jobs:
            return HandlerResult.DONE
        body = render_comment(repo, oncalls, head_sha, jobs)
        number = int(payload["pr_number"])
        try:
            await self._write(number, repo, body)
        except (GitHubNotFound, GitHubUnprocessable) as exc:
            log.error("oncall comment on %s#%s refused: %s", self._upstream, number, exc)
            return HandlerResult.DROP
        return HandlerResult.DONE

    async def _write(self, number: int, repo: str, body: str) -> None:
        retries = self._max_retries
        comments = await self._github.list_issue_comments(
            self._upstream, number, max_retries=retries
        )
        existing = find_comment(comments, repo)
        if existing is None:
            await self._github.create_issue_comment(
                self._upstream, number, body, max_retries=retries
            )
        elif existing.get("body") != body:
            await self._github.update_issue_comment(
                self._upstream, int(existing["id"]), body, max_retries=retries
            )

"""Re-run downstream CI when a maintainer clicks "Re-run" on a crcr check (SPEC §7).

`check_run` `rerequested` re-runs the failed jobs of that check's downstream run;
`check_suite` `rerequested` ("Re-run all checks") re-runs every distinct L3+ run in the
suite. A run that is still going is left alone: GitHub answers "already running", which
is what the maintainer wanted anyway.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from crcr.github.client import GitHubClient, RerunOutcome
from crcr.github.errors import GitHubError, GitHubNotFound
from crcr.relay.allowlist.model import Allowlist, Level
from crcr.relay.checks.check_runs import CHECK_NAME_PREFIX, DownstreamRun, downstream_run_of
from crcr.web.error_bodies import error_body

log = logging.getLogger(__name__)


def why_not_rerunnable(check_run: Mapping[str, Any], allowlist: Allowlist) -> str | None:
    """None when crcr can re-run the downstream run behind `check_run`; else the reason.

    The reason is the maintainer's answer, so it names the real one: not crcr's check,
    a run GitHub cannot re-run (Buildkite's builds; only Actions runs have a re-run
    API), or a backend below L3 (whose runs crcr never touches).
    """
    name = str(check_run.get("name") or "")
    segments = name.removeprefix(CHECK_NAME_PREFIX).split("/")
    if not name.startswith(CHECK_NAME_PREFIX) or len(segments) < 3:
        return f"{name!r} is not a crcr check run"
    repo = f"{segments[0]}/{segments[1]}"
    level = allowlist.level_of(repo)
    if level is None or level < Level.L3:
        where = f"at {level}" if level is not None else "not on the allowlist"
        return f"{repo} is {where}: only L3/L4 backends are re-run from upstream checks"
    if downstream_run_of(name, check_run.get("external_id")) is None:
        details = str(check_run.get("details_url") or "")
        ci = "a Buildkite build" if "buildkite" in details.lower() else "not a GitHub Actions run"
        where = f" ({details})" if details else ""
        return (
            f"{name!r} is {ci}, and GitHub can re-run only Actions runs: "
            f"re-run it in {repo}'s own CI{where}"
        )
    return None


def runs_of_check_runs(check_runs: Iterable[Mapping[str, Any]]) -> list[DownstreamRun]:
    """The distinct downstream runs behind crcr's check runs, in first-seen order."""
    runs: dict[tuple[str, int], DownstreamRun] = {}
    for check_run in check_runs:
        run = downstream_run_of(str(check_run.get("name") or ""), check_run.get("external_id"))
        if run is not None:
            runs.setdefault((run.repo.lower(), run.run_id), run)
    return list(runs.values())


@dataclass(frozen=True)
class RerunResult:
    """What happened to one downstream run."""

    run: DownstreamRun
    outcome: RerunOutcome | None
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        """The webhook answer's entry for this run."""
        shown: dict[str, Any] = {"repo": self.run.repo, "run_id": self.run.run_id}
        if self.outcome is not None:
            shown["outcome"] = self.outcome.value
        if self.error is not None:
            shown["error"] = self.error
        return shown


class Rerunner:
    """Answers `check_run` / `check_suite` `rerequested` webhooks."""

    def __init__(
        self,
        github: GitHubClient,
        allowlist: Callable[[], Awaitable[Allowlist]],
        upstream_repo: str,
        *,
        concurrency: int = 8,
        max_retries: int = 1,
    ) -> None:
        self._github = github
        self._allowlist = allowlist
        self._upstream = upstream_repo
        self._concurrency = concurrency
        self._max_retries = max_retries

    async def handle(self, event: str, payload: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        """Re-run what the event asks for; return the webhook's status and body.

        502 only when every re-run failed (GitHub shows the delivery as failed, and
        someone can redeliver it); runs that could not be found are reported, not raised.
        """
        if event == "check_run":
            listed = [payload.get("check_run") or {}]
            rerun = self._github.rerun_failed_jobs
        else:
            suite_id = (payload.get("check_suite") or {}).get("id")
            if not isinstance(suite_id, int):
                return 400, error_body("check_suite.id: required")
            try:
                listed = await self._github.list_check_runs_in_suite(
                    self._upstream, suite_id, max_retries=self._max_retries
                )
            except GitHubNotFound:
                # A suite GitHub does not know (deleted, or not ours): nothing to re-run,
                # and a redelivery would not change that.
                return 200, {"ignored": True, "reason": f"check suite {suite_id} not found"}
            except GitHubError as exc:
                return 502, error_body(f"listing check suite {suite_id}: {exc}")
            rerun = self._github.rerun_workflow
        allowlist = await self._allowlist()
        judged = [(check_run, why_not_rerunnable(check_run, allowlist)) for check_run in listed]
        eligible = runs_of_check_runs(check_run for check_run, why in judged if why is None)
        skipped = list(dict.fromkeys(why for _, why in judged if why is not None))
        if not eligible:
            reason = "; ".join(skipped) or "the check suite has no check runs"
            return 200, {"ignored": True, "reason": reason}
        results = await self._rerun_all(eligible, rerun)
        started = [r.as_json() for r in results if r.outcome is RerunOutcome.STARTED]
        running = [r.as_json() for r in results if r.outcome is RerunOutcome.ALREADY_RUNNING]
        failed = [r.as_json() for r in results if r.outcome is None]
        if failed and not (started or running):
            return 502, error_body(f"no re-run started ({len(failed)} failed)", errors=failed)
        body = {"ok": True, "rerun": started, "already_running": running}
        return 200, {**body, "failed": failed, "skipped": skipped}

    async def _rerun_all(
        self, runs: list[DownstreamRun], rerun: Callable[..., Awaitable[RerunOutcome]]
    ) -> list[RerunResult]:
        limit = asyncio.Semaphore(self._concurrency)

        async def one(run: DownstreamRun) -> RerunResult:
            async with limit:
                try:
                    outcome = await rerun(run.repo, run.run_id, max_retries=self._max_retries)
                except GitHubError as exc:
                    log.warning("re-run of %s run %s failed: %s", run.repo, run.run_id, exc)
                    return RerunResult(run, None, str(exc))
                return RerunResult(run, outcome)

        return list(await asyncio.gather(*(one(run) for run in runs)))

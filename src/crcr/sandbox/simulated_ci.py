"""Simulated downstream CI: dispatches to the sandbox GitHub start runs whose jobs report back.

Each downstream repository with a `WorkflowSpec` behaves like a GitHub Actions
workflow triggered by `repository_dispatch`: a dispatch starts a run (registered in
the sandbox so that re-runs work), every job reports `in_progress` and then
`completed` through the real reporter over HTTP with a sandbox-minted OIDC token, a
PR `closed` dispatch cancels that PR's running jobs, a re-run starts a new attempt,
and a hanging job never reports again. Time runs `speed` times faster than real.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import tempfile
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any

import httpx

from crcr.reporter.retry import RetryPolicy
from crcr.reporter.token import DEFAULT_AUDIENCE
from crcr.sandbox.github_jobs import ActionsJob
from crcr.sandbox.github_model import Dispatch, Rerun
from crcr.sandbox.github_state import SandboxGitHub
from crcr.sandbox.oidc_issuer import SandboxIssuer
from crcr.sandbox.simulated_breakage import spec_for
from crcr.sandbox.simulated_ci_job import (
    JobReporter,
    RunnerContext,
    bind_request_token,
    job_environment,
    write_event_file,
)
from crcr.sandbox.simulated_ci_model import WorkflowSpec, plan_attempt
from crcr.sandbox.simulated_ci_state import (
    AttemptState,
    JobState,
    SimulatedRun,
    SimulationSnapshot,
    snapshot_of,
)

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]


def _pr_context(dispatch: Dispatch) -> tuple[int | None, str | None]:
    """The PR number and action a `pull_request` dispatch carries."""
    payload = dispatch.client_payload.get("payload")
    if dispatch.event_type != "pull_request" or not isinstance(payload, Mapping):
        return None, None
    pr = payload.get("pull_request")
    number = pr.get("number") if isinstance(pr, Mapping) else None
    action = payload.get("action")
    return (
        number if isinstance(number, int) else None,
        action if isinstance(action, str) else None,
    )


class SimulatedCI:
    """Downstream CI for every repository in `workflows`, driven by sandbox dispatches."""

    def __init__(
        self,
        github: SandboxGitHub,
        issuer: SandboxIssuer,
        *,
        callback_url: str,
        workflows: Mapping[str, WorkflowSpec],
        speed: float = 1.0,
        seed: int | None = None,
        audience: str = DEFAULT_AUDIENCE,
        client: httpx.AsyncClient | None = None,
        work_dir: Path | None = None,
        sleep: Sleep = asyncio.sleep,
        retry_policy: RetryPolicy | None = None,
        poll_interval: float = 0.05,
        history: int = 10_000,
    ) -> None:
        if speed <= 0:
            raise ValueError(f"speed must be positive, got {speed}")
        self.github = github
        self.issuer = issuer
        self.callback_url = callback_url
        self.workflows = {repo.lower(): spec for repo, spec in workflows.items()}
        self.speed = speed
        self.reporter = JobReporter(
            callback_url=callback_url,
            audience=audience,
            policy=retry_policy or RetryPolicy(),
            history=history,
        )
        self._rng = random.Random(seed)  # noqa: S311 - a simulation, not crypto
        self._client = client
        self._owns_client = client is None
        self._work_dir = work_dir
        self._temp_dir: tempfile.TemporaryDirectory[str] | None = None
        self._sleep = sleep
        self._poll_interval = poll_interval
        self._runs: dict[tuple[str, int], SimulatedRun] = {}
        self._run_of_delivery: dict[tuple[str, str], SimulatedRun] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reruns_seen = 0
        self._conclusions: Counter[str] = Counter()
        self._running = False
        self.lies: dict[str, str] = {}
        """Fault knob: repo → the conclusion its jobs report whatever really happened."""
        self.broken_from: dict[str, str] = {}
        """Fault knob: repo → the upstream commit from which on its jobs all fail."""

    # --- lifecycle -----------------------------------------------------------------
    async def start(self) -> None:
        """Listen for dispatches and re-runs; runs start from now on."""
        self._loop = asyncio.get_running_loop()
        if self._work_dir is None:
            self._temp_dir = tempfile.TemporaryDirectory(prefix="crcr-simulated-ci-")
            self._work_dir = Path(self._temp_dir.name)
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(10.0))
        self.reporter.client = self._client
        self._running = True
        self.github.add_dispatch_listener(self._on_dispatch)
        self._spawn(self._watch_reruns())

    async def stop(self, *, grace: float = 10.0) -> None:
        """Stop every job where it stands (reports on the wire finish) and release resources."""
        self._running = False
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.reporter.drain(grace)
        for run in self._runs.values():
            for attempt in run.attempts:
                self.issuer.revoke_request_token(attempt.request_token)
        if self._owns_client and self._client is not None:
            await self._client.aclose()
            self._client = None
        if self._temp_dir is not None:
            self._temp_dir.cleanup()
            self._temp_dir = None

    async def __aenter__(self) -> SimulatedCI:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.stop()

    # --- inspection ----------------------------------------------------------------
    def replace_workflow(self, repo: str, spec: WorkflowSpec) -> None:
        """Run `spec` for `repo`'s later dispatches (the demo degrades a backend mid-run)."""
        self.workflows[repo.lower()] = spec

    def runs(self, repo: str | None = None) -> list[SimulatedRun]:
        """Runs started so far, oldest first."""
        return [r for r in self._runs.values() if repo is None or r.repo.lower() == repo.lower()]

    def snapshot(self) -> SimulationSnapshot:
        """Counters for a progress display."""
        return snapshot_of(
            list(self._runs.values()),
            conclusions=self._conclusions,
            reports_sent=self.reporter.sent,
            report_errors=self.reporter.errors,
            last_error=self.reporter.last_error,
        )

    # --- reacting to the sandbox ---------------------------------------------------
    def _on_dispatch(self, dispatch: Dispatch) -> None:
        """Called by the sandbox (possibly from its server thread) for each dispatch."""
        loop = self._loop
        if not self._running or loop is None or dispatch.repo.lower() not in self.workflows:
            return
        with contextlib.suppress(RuntimeError):  # the loop closed while shutting down
            loop.call_soon_threadsafe(self._handle_dispatch, dispatch)

    def _handle_dispatch(self, dispatch: Dispatch) -> None:
        if not self._running:
            return
        if dispatch.event_type == "crcr_cancel":  # SPEC §15: as cancel-on-supersede.yml does
            self._cancel_delivery(dispatch)
            return
        pr_number, action = _pr_context(dispatch)
        if action == "closed":
            self._cancel_pr(dispatch.repo, pr_number)
            return
        spec = spec_for(
            self.github,
            self.workflows[dispatch.repo.lower()],
            dispatch,
            self.broken_from.get(dispatch.repo.lower()),
        )
        run_id = self.github.add_workflow_run(dispatch.repo, status="queued", conclusion=None)
        assert self._work_dir is not None
        directory = self._work_dir / dispatch.repo.replace("/", "__") / str(run_id)
        write_event_file(
            directory / "event.json", dispatch.repo, dispatch.event_type, dispatch.client_payload
        )
        run = SimulatedRun(dispatch.repo, run_id, spec, pr_number, directory)
        self._runs[(dispatch.repo.lower(), run_id)] = run
        delivery = str(dispatch.client_payload.get("delivery_id") or "")
        self._run_of_delivery[(dispatch.repo.lower(), delivery)] = run
        self._start_attempt(run, 1, only=None)

    def _cancel_delivery(self, dispatch: Dispatch) -> None:
        """A superseded head's run is cancelled: running jobs report `cancelled`."""
        cancel = dispatch.client_payload.get("cancel")
        delivery = cancel.get("delivery_id") if isinstance(cancel, Mapping) else None
        run = self._run_of_delivery.get((dispatch.repo.lower(), str(delivery)))
        if run is not None and run.attempts:
            run.current.cancelled.set()

    def _cancel_pr(self, repo: str, pr_number: int | None) -> None:
        """A closed PR cancels its runs: running jobs report `cancelled`, queued ones vanish."""
        if pr_number is None:
            return
        for run in self.runs(repo):
            if run.pr_number == pr_number and run.attempts:
                run.current.cancelled.set()

    async def _watch_reruns(self) -> None:
        """Poll the sandbox's re-run log: it has no listener hook, and polling is cheap."""
        while True:
            reruns = self.github.reruns()
            for rerun in reruns[self._reruns_seen :]:
                self._handle_rerun(rerun)
            self._reruns_seen = len(reruns)
            await asyncio.sleep(self._poll_interval)

    def _handle_rerun(self, rerun: Rerun) -> None:
        run = self._runs.get((rerun.repo.lower(), rerun.run_id))
        if run is None:
            return
        attempt = self.github.repo(run.repo).workflow_runs[run.run_id].run_attempt
        only = run.jobs_to_rerun(rerun.kind)
        self._start_attempt(run, attempt, only=only)

    # --- running attempts and jobs -------------------------------------------------
    def _start_attempt(self, run: SimulatedRun, number: int, *, only: list[str] | None) -> None:
        plan = plan_attempt(run.spec, self._rng, attempt=number, only=only)
        context = self._runner_context(run, number)
        attempt = AttemptState(
            number=number,
            jobs={
                job.name: JobState(planned=job, check_run_id=self.github.next_id()) for job in plan
            },
            request_token=bind_request_token(self.issuer, context),
        )
        run.attempts.append(attempt)
        for job in attempt.jobs.values():
            self._spawn(self._run_job(run, attempt, job, context))

    def _runner_context(self, run: SimulatedRun, number: int) -> RunnerContext:
        runner_temp = run.directory / f"attempt-{number}"
        runner_temp.mkdir(parents=True, exist_ok=True)
        return RunnerContext(
            repo=run.repo,
            workflow_name=run.spec.name,
            run_id=run.run_id,
            run_attempt=number,
            event_path=run.directory / "event.json",
            runner_temp=runner_temp,
        )

    async def _run_job(
        self, run: SimulatedRun, attempt: AttemptState, job: JobState, context: RunnerContext
    ) -> None:
        planned = job.planned
        try:
            if await self._pause(planned.queue_delay, attempt.cancelled):
                job.phase = "dropped"
                return
            self.github.set_run_status(run.repo, run.run_id, "in_progress")
            self._record_github_job(run, attempt, job)
            await self._report(context, attempt, job, "in_progress", None)
            job.phase = "running"
            if planned.outcome == "hang":
                # The runner died mid-job: nothing reports again, not even a cancel.
                job.phase = "hanging"
                return
            cancelled = await self._pause(planned.duration, attempt.cancelled)
            conclusion = "cancelled" if cancelled else planned.outcome
            reported = self.lies.get(run.repo.lower(), conclusion)
            await self._report(context, attempt, job, "completed", reported)
            # As on GitHub, the job ends after its last step (the report) has run.
            self.github.jobs.update(
                job.check_run_id,
                status="completed",
                conclusion=conclusion,
                completed_at=self.github.clock(),
            )
            job.phase, job.conclusion = "completed", conclusion
            run.latest_conclusions[planned.name] = conclusion
            self._conclusions[conclusion] += 1
        finally:
            # While stopping, jobs are cut off where they stand: nothing settles, so no
            # request token is revoked under a report that is still being delivered.
            if self._running:
                self._settle_if_done(run, attempt)

    def _record_github_job(self, run: SimulatedRun, attempt: AttemptState, job: JobState) -> None:
        """Tell the sandbox GitHub the job started: its jobs API answers from this record."""
        now = self.github.clock()
        self.github.jobs.record(
            ActionsJob(
                id=job.check_run_id,
                repo=run.repo,
                run_id=run.run_id,
                run_attempt=attempt.number,
                name=job.planned.name,
                workflow_name=run.spec.name,
                head_sha=f"{run.run_id:040x}",
                created_at=now,
                status="in_progress",
                started_at=now,
            )
        )

    def _settle_if_done(self, run: SimulatedRun, attempt: AttemptState) -> None:
        """When every job of the attempt has settled, the run completes (unless one hangs)."""
        if not attempt.settled or attempt is not run.current:
            return
        self.issuer.revoke_request_token(attempt.request_token)
        if any(job.phase == "hanging" for job in attempt.jobs.values()):
            return
        self.github.set_run_status(run.repo, run.run_id, "completed", run.conclusion())

    async def _pause(self, seconds: float, cancelled: asyncio.Event) -> bool:
        """Wait `seconds` of simulated time; True when the run was cancelled meanwhile."""
        if cancelled.is_set():
            return True
        if seconds <= 0:
            return False
        sleeper = asyncio.ensure_future(self._sleep(seconds / self.speed))
        canceller = asyncio.ensure_future(cancelled.wait())
        try:
            await asyncio.wait({sleeper, canceller}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in (sleeper, canceller):
                waiter.cancel()
            await asyncio.gather(sleeper, canceller, return_exceptions=True)
        return cancelled.is_set()

    async def _report(
        self,
        context: RunnerContext,
        attempt: AttemptState,
        job: JobState,
        status: str,
        conclusion: str | None,
    ) -> None:
        env = job_environment(
            context,
            job.planned,
            token_url=self.issuer.token_request_url,
            request_token=attempt.request_token,
        )
        await self.reporter.report(context, env, job, status, conclusion)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self.reporter.note_error(f"simulated job crashed: {task.exception()!r}")
            log.error("simulated job crashed", exc_info=task.exception())

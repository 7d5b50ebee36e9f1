"""Upstream check runs for L3/L4 backends, as values: names, ids, outputs, conclusions (SPEC §7).

Pure: the publisher (`publisher`) decides when to call GitHub; this module decides
what to send. Everything comes from the job the relay recorded itself (`jobs.job.Job`:
the dispatch record's head SHA, PR number and labels), never from the echoed payload.

Push events have no pull request: an L4 backend still gets a check run on the pushed
SHA (it shows on the commit, `external_id` ends in `:0`), and an L3 backend gets one
only if the `checks-wanted` flag was raised for that SHA, which labels on a PR do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from crcr.relay.allowlist.model import Level, check_run_label
from crcr.relay.checks.check_actions import CHECK_RUN_ACTIONS
from crcr.relay.checks.github_text import code, link, run_id_text, single_line
from crcr.relay.checks.notes import CheckNotes, note_lines, noted_conclusion, noted_title
from crcr.relay.jobs.dispatch import RELAY_OWN_EVENTS
from crcr.relay.jobs.job import Job
from crcr.relay.jobs.lifecycle import JobState
from crcr.web.web_urls import is_web_url

CHECK_NAME_PREFIX = "crcr/"
CHECKS_WANTED_FLAG = "checks-wanted"
"""The per-(head SHA, repo) flag a `ciflow/crcr/<device>` label raises for an L3 backend."""
GITHUB_CONCLUSIONS = frozenset(
    {"action_required", "cancelled", "failure", "neutral", "success", "skipped", "stale"}
    | {"timed_out"}
)
# What other CI systems (Buildkite states, Actions run conclusions) call the same things.
CONCLUSION_ALIASES: Mapping[str, str] = {
    "passed": "success",
    "pass": "success",
    "succeeded": "success",
    "failed": "failure",
    "fail": "failure",
    "error": "failure",
    "errored": "failure",
    "broken": "failure",
    "startup_failure": "failure",
    "canceled": "cancelled",
    "canceling": "cancelled",
    "cancelling": "cancelled",
    "aborted": "cancelled",
    "timeout": "timed_out",
    "timedout": "timed_out",
    "expired": "timed_out",
    "not_run": "skipped",
}
FAILING_CONCLUSIONS = frozenset({"failure", "timed_out"})
NO_NOTES = CheckNotes()
TERMINAL_STATES = frozenset({JobState.COMPLETED, JobState.TIMED_OUT, JobState.SUPERSEDED})


@dataclass(frozen=True)
class CheckReport:
    """What one job last told the relay, with the upstream facts of its dispatch: what its
    check run, notes and oncall comment are built from."""

    job_key: str
    repo: str
    level: Level
    state: JobState
    conclusion: str | None
    workflow_name: str
    job_name: str
    run_id: str
    run_attempt: str
    run_url: str | None
    head_sha: str
    pr_number: int | None
    labels: tuple[str, ...]
    failed_tests: tuple[str, ...] = ()
    failed_total: int = 0
    issuer_kind: str | None = None
    check_run_id: str | None = None
    started_at: float | None = None
    superseded_by: str | None = None
    """The PR's newer head that superseded the job (SPEC §15), once it is SUPERSEDED."""
    event_type: str = "pull_request"
    """The upstream event its dispatch answered (`pull_request`, `push`, `merge_group` …)."""

    @property
    def check_name(self) -> str:
        """The check run's name on the upstream commit."""
        return check_run_name(self.repo, self.workflow_name, self.job_name)

    @property
    def check_conclusion(self) -> str | None:
        """GitHub's conclusion for this report, None while in progress."""
        if self.state is JobState.TIMED_OUT:
            return "timed_out"
        if self.state is JobState.SUPERSEDED:
            return "cancelled"
        if self.state is JobState.COMPLETED:
            return check_conclusion(self.conclusion)
        return None

    @property
    def failing(self) -> bool:
        """Whether this report should reach the repo's oncalls."""
        return self.check_conclusion in FAILING_CONCLUSIONS

    def to_summary(self) -> dict[str, Any]:
        """The job summary kept per (head_sha, repo) for backfills and oncall comments."""
        return {
            "name": self.check_name,
            "state": str(self.state),
            "conclusion": self.check_conclusion,
            "run_id": self.run_id,
            "run_attempt": self.run_attempt,
            "run_url": self.run_url,
            "started_at": self.started_at,
        }


def latest_per_check(summaries: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Check name → the job key of its latest run, among job summaries (`to_summary`).

    GitHub shows the newest check run of a name, so a re-run (a new `run_attempt`, so a
    new job key) or a new run of the same job on the same commit (a label or a re-push
    dispatches again) replaces the older ones: what is built from the summaries (a
    label's backfill, the oncall comment) follows the latest alone.
    """
    latest: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for key, summary in summaries.items():
        name = str(summary.get("name"))
        if name not in latest or _recency(summary) >= _recency(latest[name][1]):
            latest[name] = (key, summary)
    return {name: key for name, (key, _) in latest.items()}


def _recency(summary: Mapping[str, Any]) -> tuple[float, int, int]:
    """Which of two runs of a job is the later: started later, then attempt, then run id.

    Summaries written before `started_at` was kept compare by attempt and run id
    (GitHub's run ids grow with time).
    """
    started = summary.get("started_at")
    started_at = float(started) if isinstance(started, int | float) else 0.0
    return started_at, _number(summary.get("run_attempt"), 1), _number(summary.get("run_id"), 0)


def _number(value: object, default: int) -> int:
    text = str(value or "")
    return int(text) if text.isdigit() else default


def report_from_job(job: Job) -> CheckReport:
    """The check report of a job as it stands: its run, and its dispatch's upstream facts."""
    run, context = job.run, job.dispatch.context
    return CheckReport(
        job_key=job.key,
        repo=job.verified_repo,
        level=job.level,
        state=job.state,
        conclusion=job.conclusion,
        workflow_name=run.workflow_name,
        job_name=run.job_name,
        run_id=run.run_id,
        run_attempt=run.run_attempt,
        run_url=run.url,
        head_sha=context.head_sha,
        pr_number=context.pr_number or None,
        labels=context.labels,
        failed_tests=run.failed_tests,
        failed_total=run.failed_total,
        issuer_kind=job.issuer_kind,
        check_run_id=run.check_run_id,
        started_at=None if job.in_progress_at is None else float(job.in_progress_at),
        superseded_by=job.dispatch.superseded_by if job.state is JobState.SUPERSEDED else None,
        event_type=context.event_type,
    )


def shows_nothing_upstream(job: Job) -> bool:
    """Whether a job's transition puts nothing on the upstream: a probe, bisection step,
    A/A run or cancel is the relay's own; a superseded job's late report would undo the
    `cancelled` check run its supersession left (SPEC §15)."""
    if job.dispatch.context.event_type in RELAY_OWN_EVENTS:
        return True
    return job.dispatch.superseded_by is not None and job.state is not JobState.SUPERSEDED


def check_run_name(repo: str, workflow_name: str, job_name: str) -> str:
    """`crcr/<owner/repo>/<workflow>/<job>` (the job part is left out when unnamed).

    Plain text on GitHub, but still one line of bounded length: the names are chosen
    by the downstream.
    """
    workflow_name, job_name = single_line(workflow_name), single_line(job_name)
    parts = [repo, workflow_name] + ([job_name] if job_name else [])
    return CHECK_NAME_PREFIX + "/".join(parts)


def external_id(run_id: str, pr_number: int | None) -> str:
    """`<run_id>:<pr_number>`, with 0 for pushes (as the HUD numbers them)."""
    return f"{run_id}:{pr_number or 0}"


@dataclass(frozen=True)
class DownstreamRun:
    """The downstream workflow run behind one of our check runs."""

    repo: str
    run_id: int


def downstream_run_of(name: str, external: str | None) -> DownstreamRun | None:
    """Which downstream run a check run stands for; None unless crcr created it.

    The repo is the two path segments after `crcr/` (workflow names may contain `/`,
    repo names cannot); the run id is `external_id`'s part before the colon, and only
    GitHub Actions' numeric ids can be re-run through the API.
    """
    if not name.startswith(CHECK_NAME_PREFIX):
        return None
    segments = name.removeprefix(CHECK_NAME_PREFIX).split("/")
    run_id = (external or "").partition(":")[0]
    if len(segments) < 3 or not all(segments[:2]) or not run_id.isdigit():
        return None
    return DownstreamRun(f"{segments[0]}/{segments[1]}", int(run_id))


def check_conclusion(reported: str | None) -> str:
    """GitHub's check-run conclusion for what a downstream reported.

    GitHub refuses any other value with 422, which would lose the check run. An unknown
    value maps to `failure`: an L4 check is blocking, and a conclusion nobody can read
    must not turn it green.
    """
    value = (reported or "").strip().lower()
    if value in GITHUB_CONCLUSIONS:
        return value
    return CONCLUSION_ALIASES.get(value, "failure")


def wants_check_run(
    level: Level, device: str | None, labels: Iterable[str], *, flagged: bool
) -> bool:
    """L4 always; L3 when the PR carries its device label or the wanted flag is up."""
    if level >= Level.L4:
        return True
    if level < Level.L3:
        return False
    wanted = check_run_label(device) if device else None
    return flagged or any(label.lower() == wanted for label in labels)


def output_title(report: CheckReport, notes: CheckNotes = NO_NOTES) -> str:
    """`In progress`, or the capitalised conclusion (`Failure`, `Timed out`)."""
    if report.superseded_by is not None:
        return f"Superseded by {report.superseded_by[:7]}"
    conclusion = noted_conclusion(report.check_conclusion, notes)
    title = noted_title(conclusion, notes)
    if title is not None:
        return title
    if conclusion is None:
        return "In progress"
    return conclusion.replace("_", " ").capitalize()


def output_summary(report: CheckReport, notes: CheckNotes = NO_NOTES) -> str:
    """A few lines naming the downstream repo, the job and its run, then the notes."""
    lines = [_report_summary(report)]
    lines += note_lines(
        notes,
        reported=report.check_conclusion,
        failed_tests=report.failed_tests,
        failed_total=report.failed_total,
    )
    return "\n\n".join(lines)


def _report_summary(report: CheckReport) -> str:
    """The job's own lines. Every value a downstream chose goes through `github_text`:
    names as one line of code, the run id as digits or code, the link only when it is
    a plain web URL."""
    job = code(" / ".join(part for part in (report.workflow_name, report.job_name) if part))
    link_text = link(f"run {run_id_text(report.run_id)}", report.run_url)
    repo = code(report.repo)
    conclusion = report.check_conclusion
    if conclusion is None:
        return f"{repo} ({report.level}) is running {job} in {link_text}."
    lines = [f"{repo} ({report.level}) finished {job} in {link_text}: **{conclusion}**."]
    if report.state is JobState.TIMED_OUT:
        lines.append("The job never reported completion; the relay timed it out.")
    elif report.superseded_by is not None:
        lines.append(
            f"Superseded by {code(report.superseded_by)}: a newer commit of the pull request "
            "was dispatched, so this one was cancelled and its result does not count."
        )
    elif (report.conclusion or "").strip().lower() != conclusion:
        lines.append(f"The downstream reported the conclusion {code(report.conclusion or '')}.")
    return "\n\n".join(lines)


def check_run_fields(report: CheckReport, notes: CheckNotes = NO_NOTES) -> dict[str, Any]:
    """The body of `POST /repos/{upstream}/check-runs` for this report.

    A new check run is created for every change rather than the old one edited:
    GitHub shows the newest run of a name, so a lost or reordered edit can never
    leave a stale status behind, and the relay needs no check-run ids in its state.
    """
    fields: dict[str, Any] = {
        "name": report.check_name,
        "head_sha": report.head_sha,
        "external_id": external_id(report.run_id, report.pr_number),
        "output": {"title": output_title(report, notes), "summary": output_summary(report, notes)},
    }
    if is_web_url(report.run_url, allow_http=True):
        fields["details_url"] = report.run_url
    fields["actions"] = [dict(action) for action in CHECK_RUN_ACTIONS]  # SPEC §15 buttons
    conclusion = noted_conclusion(report.check_conclusion, notes)
    if conclusion is None:
        fields["status"] = "in_progress"
    else:
        fields.update(status="completed", conclusion=conclusion)
    return fields

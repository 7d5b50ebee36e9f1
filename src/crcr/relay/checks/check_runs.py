"""Upstream check runs for L3/L4 backends, as values: names, ids, outputs, conclusions (SPEC §7).

Pure: the publisher (`publisher`) decides when to call GitHub; this module decides
what to send. Everything comes from the job record the relay wrote itself (the dispatch
record's head SHA, PR number and labels), never from the echoed callback payload.

Push events have no pull request: an L4 backend still gets a check run on the pushed
SHA (it shows on the commit, `external_id` ends in `:0`), and an L3 backend gets one
only if the `checks-wanted` flag was raised for that SHA, which labels on a PR do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from crcr.failure_detail.failed_tests import DROPPED_KEY
from crcr.relay.allowlist.model import Level, check_run_label
from crcr.relay.callback.job_state import JobState
from crcr.relay.checks.github_text import code, link, run_id_text, single_line
from crcr.relay.checks.notes import CheckNotes, note_lines, noted_conclusion, noted_title
from crcr.stores.state import JobRecord
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
TERMINAL_STATES = frozenset({JobState.COMPLETED, JobState.TIMED_OUT})


@dataclass(frozen=True)
class JobReport:
    """What one job last told the relay, with the upstream facts of its dispatch."""

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

    @property
    def check_name(self) -> str:
        """The check run's name on the upstream commit."""
        return check_run_name(self.repo, self.workflow_name, self.job_name)

    @property
    def check_conclusion(self) -> str | None:
        """GitHub's conclusion for this report, None while in progress."""
        if self.state is JobState.TIMED_OUT:
            return "timed_out"
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
        }


def report_from_job(job_key: str, job: JobRecord) -> JobReport | None:
    """Rebuild a job's report from its record; None when the record lacks the facts.

    The in_progress callback stored the dispatch record and the callback (minus the
    echoed payload) for the sweeper; later transitions merge their state over it.
    """
    data = job.data
    record, callback = data.get("record"), data.get("callback")
    if not isinstance(record, Mapping) or not isinstance(callback, Mapping):
        return None
    context, workflow = record.get("context"), callback.get("workflow")
    if not isinstance(context, Mapping) or not isinstance(workflow, Mapping):
        return None
    try:
        state, level = JobState(job.state), Level[str(data.get("level"))]
    except (KeyError, ValueError):
        return None
    pr_number = context.get("pr_number")
    url = workflow.get("url")
    failed_tests, failed_total = _failed_tests(workflow.get("test_results"))
    check_run_id = workflow.get("check_run_id")
    started = data.get("in_progress_at")
    return JobReport(
        job_key=job_key,
        repo=str(data.get("verified_repo") or record.get("repo") or ""),
        level=level,
        state=state,
        conclusion=data.get("conclusion"),
        workflow_name=str(workflow.get("name") or ""),
        job_name=str(workflow.get("job_name") or ""),
        run_id=str(workflow.get("run_id") or ""),
        run_attempt=str(workflow.get("run_attempt") or "1"),
        run_url=url if isinstance(url, str) else None,
        head_sha=str(context.get("head_sha") or ""),
        pr_number=int(pr_number) if pr_number else None,
        labels=tuple(str(label) for label in context.get("labels") or ()),
        failed_tests=failed_tests,
        failed_total=failed_total,
        issuer_kind=str(data["issuer_kind"]) if data.get("issuer_kind") else None,
        check_run_id=str(check_run_id) if check_run_id else None,
        started_at=float(started) if isinstance(started, int | float) else None,
    )


def _failed_tests(test_results: object) -> tuple[tuple[str, ...], int]:
    """The failed tests' names the relay kept (bounded on the way in), and how many failed."""
    if not isinstance(test_results, Mapping):
        return (), 0
    entries = test_results.get("failed_tests")
    names = tuple(
        str(entry["name"])
        for entry in (entries if isinstance(entries, list) else ())
        if isinstance(entry, Mapping) and entry.get("name")
    )
    dropped = test_results.get(DROPPED_KEY)
    total = len(names) + (dropped if isinstance(dropped, int) else 0)
    return names, total


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


def output_title(report: JobReport, notes: CheckNotes = NO_NOTES) -> str:
    """`In progress`, or the capitalised conclusion (`Failure`, `Timed out`)."""
    conclusion = noted_conclusion(report.check_conclusion, notes)
    title = noted_title(conclusion, notes)
    if title is not None:
        return title
    if conclusion is None:
        return "In progress"
    return conclusion.replace("_", " ").capitalize()


def output_summary(report: JobReport, notes: CheckNotes = NO_NOTES) -> str:
    """A few lines naming the downstream repo, the job and its run, then the notes."""
    lines = [_report_summary(report)]
    lines += note_lines(
        notes,
        reported=report.check_conclusion,
        failed_tests=report.failed_tests,
        failed_total=report.failed_total,
    )
    return "\n\n".join(lines)


def _report_summary(report: JobReport) -> str:
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
    elif (report.conclusion or "").strip().lower() != conclusion:
        lines.append(f"The downstream reported the conclusion {code(report.conclusion or '')}.")
    return "\n\n".join(lines)


def check_run_fields(report: JobReport, notes: CheckNotes = NO_NOTES) -> dict[str, Any]:
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
    conclusion = noted_conclusion(report.check_conclusion, notes)
    if conclusion is None:
        fields["status"] = "in_progress"
    else:
        fields.update(status="completed", conclusion=conclusion)
    return fields

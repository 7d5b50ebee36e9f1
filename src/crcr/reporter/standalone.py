"""`python3 -m crcr.reporter`: `crcr report` on nothing but the standard library (SPEC §8).

The composite action runs this from its own checkout with the runner's `python3`
(3.9 or newer): no venv, no pip, no package index. Same options and exit codes as
`crcr report`, plus the action's own behaviour behind `--action`:

- the outcome and HTTP status go to `$GITHUB_OUTPUT` (`outcome`, `http-status`);
- a report that fails after its retries becomes an annotation — `::error` for what only
  the downstream can fix (a 4xx, a wrong input, no `id-token: write`), `::warning` for
  the rest (relay down, 5xx) — and, unless `--fail-on-error true`, the step succeeds:
  a relay outage must never turn a downstream's green job red.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence

from crcr.reporter.command import EXIT_DELIVERED, EXIT_USAGE, Delivery, ReportResult, run_report
from crcr.reporter.post import REQUEST_TIMEOUT
from crcr.reporter.report import ReportInputs
from crcr.reporter.retry import RetryPolicy
from crcr.reporter.token import DEFAULT_AUDIENCE

ANNOTATION_TITLE = "crcr report"
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off", "")


def _flag(value: str) -> bool:
    """A boolean action input: GitHub passes `true`/`false` as text."""
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {value!r}")


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {value!r}") from None
    if seconds < 1.0:
        raise argparse.ArgumentTypeError(f"must be at least 1 second, got {value!r}")
    return seconds


def _attempts(value: str) -> int:
    if not value.strip().isdigit() or not 1 <= int(value) <= 10:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to 10, got {value!r}")
    return int(value)


def build_parser() -> argparse.ArgumentParser:
    """The options of `crcr report` (see `crcr report --help`), and `--action`."""
    parser = argparse.ArgumentParser(
        prog="python3 -m crcr.reporter", description="Report this CI job's status to the relay."
    )
    add = parser.add_argument
    add("--status", required=True, help="in_progress or completed.")
    add("--conclusion", default="", help="With completed: success, failure, cancelled, …")
    add("--expected-conclusion", default="", help="A canary probe job's expected conclusion.")
    add("--test-results", default="", help='{"passed": 42, "failed": 0, "skipped": 3}')
    add("--artifact-url", default="", help="Where the job's logs and reports live.")
    add("--failed-tests", default="", help="A JUnit XML report or a JSON list of failed tests.")
    add("--triage-verdict", default="", help="A JSON triage verdict (schema v1), advisory.")
    add("--job-name", default="", help="Job name for the check run (default GITHUB_JOB).")
    add("--check-run-id", default=None, help="The job's check run id [env CRCR_CHECK_RUN_ID].")
    add("--callback-url", default=None, help="The relay's callback URL [env CRCR_CALLBACK_URL].")
    add("--event-type", default="", help="nightly or periodic, for a self-report.")
    add("--delivery-id", default="", help="The tested upstream commit SHA, for a self-report.")
    add("--upstream-repo", default="pytorch/pytorch", help="What a self-report tested.")
    add("--payload-file", default="", help="The dispatch client_payload as a JSON file.")
    add("--audience", default=DEFAULT_AUDIENCE, help="Audience of the OIDC token.")
    add("--provider", default="auto", help="auto, github or buildkite.")
    add("--timeout", type=_seconds, default=REQUEST_TIMEOUT, help="Seconds per request phase.")
    add("--attempts", type=_attempts, default=RetryPolicy.attempts, help="Tries before giving up.")
    add("--dry-run", action="store_true", help="Print the body; mint and send nothing.")
    add("--action", action="store_true", help="Run as the composite action (see the docs).")
    add("--fail-on-error", type=_flag, default=False, help="With --action: fail the step.")
    return parser


def escape_data(text: str) -> str:
    """Escape a workflow-command message (GitHub reads `%`, CR and LF specially)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def annotation(level: str, message: str) -> str:
    """One `::warning` / `::error` workflow command, titled so the run summary says whose."""
    return f"::{level} title={ANNOTATION_TITLE}::{escape_data(message)}"


def write_outputs(env: Mapping[str, str], result: ReportResult) -> None:
    """Append `outcome` and `http-status` to the step's `$GITHUB_OUTPUT` file, if there is one."""
    path = env.get("GITHUB_OUTPUT", "")
    if not path:
        return
    status = "" if result.http_status is None else str(result.http_status)
    try:
        with open(path, "a", encoding="utf-8") as outputs:
            outputs.write(f"outcome={result.outcome}\nhttp-status={status}\n")
    except OSError as exc:
        print(annotation("warning", f"cannot write step outputs to {path}: {exc}"))


def finish(result: ReportResult, env: Mapping[str, str], *, action: bool, fail: bool) -> int:
    """Print the failure as the caller expects it; return the process's exit code."""
    if result.exit_code == EXIT_DELIVERED:
        if action:
            write_outputs(env, result)
        return EXIT_DELIVERED
    if not action:
        print(f"crcr report: {result.message}", file=sys.stderr)
        return result.exit_code
    write_outputs(env, result)
    level = "error" if result.configuration_fault else "warning"
    print(annotation(level, result.message))
    if fail:
        return result.exit_code
    print("crcr report: the job goes on (fail-on-error is false)")
    return EXIT_DELIVERED


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Parse, report, and say how it went; the return value is the exit code."""
    env = dict(os.environ if environ is None else environ)
    parser = build_parser()
    try:
        options = parser.parse_args(argv)
    except SystemExit as exc:  # argparse has printed why; `--help` exits 0
        return EXIT_USAGE if exc.code else EXIT_DELIVERED
    inputs = ReportInputs(
        status=options.status,
        conclusion=options.conclusion,
        test_results=options.test_results,
        artifact_url=options.artifact_url,
        job_name=options.job_name,
        check_run_id=options.check_run_id or env.get("CRCR_CHECK_RUN_ID", ""),
        event_type=options.event_type,
        delivery_id=options.delivery_id,
        payload_file=options.payload_file,
        upstream_repo=options.upstream_repo,
        provider=options.provider,
        failed_tests=options.failed_tests,
        triage_verdict=options.triage_verdict,
        expected_conclusion=options.expected_conclusion,
    )
    delivery = Delivery(
        callback_url=options.callback_url or env.get("CRCR_CALLBACK_URL", ""),
        audience=options.audience,
        timeout=options.timeout,
        attempts=options.attempts,
        dry_run=options.dry_run,
    )
    if options.action:
        result = run_report(inputs, env, delivery, warn=lambda m: print(annotation("warning", m)))
    else:
        result = run_report(inputs, env, delivery)
    return finish(result, env, action=options.action, fail=options.fail_on_error)

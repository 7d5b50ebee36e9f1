"""Read `--failed-tests` and `--triage-verdict` files for the callback body (SPEC §11).

Both are advisory, so neither stops a report: a missing or unreadable file (the test
run crashed before writing its JUnit report, say) becomes a warning and the job's
result is sent without it. A job's status reaching the relay matters more.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from crcr.failure_detail.failed_tests import DROPPED_KEY, bound_failed_tests
from crcr.failure_detail.triage_verdict import sanitise_triage_verdict
from crcr.reporter.junit import MAX_REPORT_BYTES, JUnitError, read_junit


@dataclass
class FailureDetail:
    """What the files added to the body, and the warnings to print."""

    counts: dict[str, int] | None = None
    failed_tests: list[dict[str, str]] | None = None
    dropped: int = 0
    triage_verdict: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)

    def apply(self, workflow: dict[str, Any]) -> None:
        """Put the detail into a `workflow` object; counts given on the command line win."""
        if self.failed_tests is not None:
            results = workflow.setdefault("test_results", dict(self.counts or {}))
            for key in ("passed", "failed", "skipped"):
                results.setdefault(key, 0)
            results["failed_tests"] = self.failed_tests
            if self.dropped:
                results[DROPPED_KEY] = self.dropped
        if self.triage_verdict is not None:
            workflow["triage_verdict"] = self.triage_verdict


def _read(path: str, option: str) -> bytes:
    """The file's bytes; one over `MAX_REPORT_BYTES` is refused, not read into memory."""
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_REPORT_BYTES + 1)
    except OSError as exc:
        raise ValueError(f"{option} {path}: cannot be read ({exc.strerror or exc})") from None
    if len(data) > MAX_REPORT_BYTES:
        raise ValueError(f"{option} {path}: larger than {MAX_REPORT_BYTES // 2**20} MiB")
    return data


def _json(data: bytes, option: str, path: str) -> Any:
    try:
        return json.loads(data)
    except ValueError as exc:
        raise ValueError(f"{option} {path}: not valid JSON ({exc})") from None


def _failed_tests_from(data: bytes, path: str) -> tuple[list[Any], dict[str, int] | None]:
    """The raw entries and, for JUnit, the counts; JSON is a list, anything else XML."""
    if data.lstrip()[:1] == b"[":
        return _json(data, "--failed-tests", path), None
    try:
        summary = read_junit(data)
    except JUnitError as exc:
        raise ValueError(f"--failed-tests {path}: {exc}") from None
    counts = {"passed": summary.passed, "failed": summary.failed, "skipped": summary.skipped}
    return list(summary.failed_tests), counts


def read_failure_detail(failed_tests_path: str | None, verdict_path: str | None) -> FailureDetail:
    """Read whichever files were given; problems become warnings, never errors."""
    detail = FailureDetail()
    if failed_tests_path:
        try:
            raw, detail.counts = _failed_tests_from(
                _read(failed_tests_path, "--failed-tests"), failed_tests_path
            )
            bounded = bound_failed_tests(raw)
            if bounded.refused is not None:
                raise ValueError(f"--failed-tests {failed_tests_path}: {bounded.refused}")
            detail.failed_tests, detail.dropped = bounded.entries, bounded.dropped
            if detail.counts is None:
                detail.counts = {"failed": len(raw)}
        except ValueError as exc:
            detail.warnings.append(f"failed tests not sent: {exc}")
    if verdict_path:
        try:
            document = _json(
                _read(verdict_path, "--triage-verdict"), "--triage-verdict", verdict_path
            )
        except ValueError as exc:
            detail.warnings.append(f"triage verdict not sent: {exc}")
        else:
            checked = sanitise_triage_verdict(document)
            detail.triage_verdict = checked.verdict
            if checked.reason is not None:
                detail.warnings.append(f"triage verdict not sent: {checked.reason}")
    return detail

"""Job rows as `JobRow`s, the form every view shows them in."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crcr.hud.job_facts import JobFacts


@dataclass(frozen=True)
class FailedTest:
    """One failed test a downstream named (SPEC §11), as bounded on ingest."""

    name: str
    file: str | None = None
    message: str | None = None


@dataclass(frozen=True)
class JobRow(JobFacts):
    """One stored job execution, as the HUD holds it; None is a null column.

    `failed_tests` is None when the downstream named none; `failed_tests_dropped` counts
    the names beyond the kept ones. `triage_verdict` is the downstream's claim (sanitised
    on ingest), `confirmed` what GitHub said of a reported conclusion, and `baseline` the
    HUD's own verdict on a failed PR job (`crcr.hud.baseline`), None for other jobs.
    """

    failed_tests: tuple[FailedTest, ...] | None = None
    failed_tests_dropped: int = 0
    triage_verdict: dict[str, Any] | None = None
    confirmed: bool | None = None
    github_conclusion: str | None = None
    baseline: str | None = None
    superseded_by: str | None = None
    """The newer head of its PR that superseded the job (SPEC §15); it counts nowhere."""


_FIELDS = tuple(JobFacts.__dataclass_fields__)


def _json(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def failed_tests_of(text: str | None) -> tuple[tuple[FailedTest, ...] | None, int]:
    """The stored `failed_tests` JSON as records and the count of names dropped."""
    stored = _json(text)
    if not isinstance(stored, Mapping) or not isinstance(stored.get("tests"), list):
        return None, 0
    tests = tuple(
        FailedTest(name=entry["name"], file=entry.get("file"), message=entry.get("message"))
        for entry in stored["tests"]
        if isinstance(entry, Mapping) and isinstance(entry.get("name"), str)
    )
    dropped = stored.get("dropped")
    return tests, dropped if isinstance(dropped, int) else 0


def job_row(row: Mapping[Any, Any], baseline: str | None = None) -> JobRow:
    """A stored row as the read side's record, with its baseline verdict if it has one."""
    tests, dropped = failed_tests_of(row["failed_tests"])
    verdict = _json(row["triage_verdict"])
    confirmed = row["confirmed"]
    return JobRow(
        **{name: row[name] for name in _FIELDS},
        failed_tests=tests,
        failed_tests_dropped=dropped,
        triage_verdict=verdict if isinstance(verdict, dict) else None,
        confirmed=None if confirmed is None else bool(confirmed),
        github_conclusion=row["github_conclusion"],
        baseline=baseline,
        superseded_by=row.get("superseded_by"),
    )

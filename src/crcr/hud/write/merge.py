"""How a callback updates a stored job row without clobbering what it does not carry.

Pure: `merged_row` takes the stored values (or None) and a report, and returns the row to
store. A `completed` callback carries no queue time and may carry no `started_at`; those
stay as the `in_progress` callback left them. A completed row never goes back to in
progress (a late, reordered `in_progress` only fills gaps), but a later `completed` does
replace an earlier one: that is how a late completion replaces the sweeper's `timed_out`.

The row's rollup bucket (`activity_at`, `day`) follows the relay's clock, not the
downstream's self-reported timestamps: it is when the HUD learnt the row's current state.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from operator import attrgetter
from typing import Any

from crcr.hud.write.report import JobReport

IDENTITY_FIELDS = (
    "downstream_repo",
    "delivery_id",
    "workflow_name",
    "job_name",
    "run_id",
    "run_attempt",
    "check_run_id",
)
CARRIED_FIELDS = (
    "downstream_repo_level",
    "started_at",
    "completed_at",
    "queue_time",
    "execution_time",
    "passed",
    "failed",
    "skipped",
    "total_tests",
    "workflow_run_url",
    "artifact_url",
    # Failure detail (SPEC §11): a later body without it (a confirmation of the
    # conclusion, a redelivery) keeps what an earlier one said.
    "failed_tests",
    "triage_verdict",
    "confirmed",
    "github_conclusion",
    # SPEC §13: an in_progress callback may state it, its completed one not again.
    "expected_conclusion",
    # SPEC §15: once superseded, always; a late callback that does not say so keeps it.
    "superseded_by",
)
CONTEXT_FIELDS = ("upstream_repo", "event_type", "pr_number", "head_sha")


def merged_row(old: Mapping[str, Any] | None, report: JobReport, now: datetime) -> dict[str, Any]:
    """The row to store after `report`, given the stored row `old` (None if new)."""
    row: dict[str, Any] = dict(old) if old is not None else {}
    row["job_key"] = report.job_key
    row.update(zip(IDENTITY_FIELDS, _identity(report), strict=True))
    if old is None:  # every field as the report has it
        row.update(zip(CONTEXT_FIELDS, _context(report), strict=True))
        row.update(zip(CARRIED_FIELDS, _carried(report), strict=True))
    else:
        for name, value in zip(CONTEXT_FIELDS, _context(report), strict=True):
            if value or name not in row:
                row[name] = value
        for name, value in zip(CARRIED_FIELDS, _carried(report), strict=True):
            if value is not None or name not in row:
                row[name] = value

    regress = old is not None and old["status"] == "completed" and report.status != "completed"
    if not regress:
        row["status"] = report.status
        if report.conclusion is not None or old is None:
            row["conclusion"] = report.conclusion
    row["duration"] = _duration(row["started_at"], row["completed_at"])

    state_changed = old is None or (row["status"], row["conclusion"]) != (
        old["status"],
        old["conclusion"],
    )
    row.setdefault("received_at", now)
    if state_changed:
        row["activity_at"] = now
        row["day"] = now.date()
    row["updated_at"] = old["updated_at"] if old is not None else now
    if old is not None and not same_values(old, row):  # `updated_at` is old's here
        row["updated_at"] = now
    return row


def _duration(started: datetime | None, completed: datetime | None) -> float | None:
    if started is None or completed is None:
        return None
    return round(max(0.0, (completed - started).total_seconds()), 3)


def same_values(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether `new` has `old`'s values, and nothing else but Nones: a merge that changed nothing.

    Two dicts with the same columns compare in one C call; other shapes field by field.
    """
    if type(old) is dict and type(new) is dict and old.keys() == new.keys():
        return old == new
    return all(old.get(name) == value for name, value in new.items())


# One C call per group rather than a `getattr` per field (the write path's per-report work).
_identity = attrgetter(*IDENTITY_FIELDS)
_context = attrgetter(*CONTEXT_FIELDS)
_carried = attrgetter(*CARRIED_FIELDS)

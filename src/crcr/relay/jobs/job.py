"""A job as the relay keeps it: the typed view of a job record's `data`, and its writes.

The state store keeps each job as a record whose `data` is a JSON mapping: written whole
by the in_progress callback, then merged over (top-level keys replaced, others kept) by
the completion and by the sweeper's timeout. This module is the one place that knows
that mapping's keys; `callback/`, `sweeper/` and `checks/` read and write jobs through
`Job`, `JobCompletion` and `JobTimeout`. `Job.to_store` gives back the mapping key for
key and in order, so records already in Redis or SQLite load, and what is written now is
byte for byte what the store has always held.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from crcr.failure_detail.failed_tests import DROPPED_KEY
from crcr.relay.allowlist.model import Level
from crcr.relay.jobs.dispatch import DispatchRecord
from crcr.relay.jobs.lifecycle import JobState, ReportedStatus
from crcr.stores.state import JobRecord

# The keys of a job record's `data`, in the order the in_progress callback writes them;
# the completion then adds `completed_at` and the timeout `timed_out_at` at the end.
_STARTED_KEYS = (
    "status",
    "conclusion",
    "in_progress_at",
    "queue_time",
    "verified_repo",
    "level",
    "issuer_kind",
    "record",
    "callback",
)
_KNOWN_KEYS = frozenset({*_STARTED_KEYS, "completed_at", "timed_out_at"})


MAX_JOB_RECORD_BYTES = 96 * 1024
"""The most one job record's data may take in the state store, as JSON.

It holds the dispatch record (upstream context: GitHub allows 100 labels of at most 50
characters on a PR, ~6 KB), the callback minus its echoed payload (unknown keys
dropped, every string capped by `schema`: ~5.5 KB), the failed tests' names and files
(at most 100 of 300 + 300 characters: ~62 KB; their messages are left to the HUD, see
`kept_in_job_record`), a triage verdict (at most 16 KB) and a few numbers. With the
default `CRCR_STATUS_TTL` of 3 days and rate limit, one downstream can hold at most
100 x 60 x 72 records at once, whatever it sends.
"""


class JobRecordUnreadable(ValueError):
    """A job record without the facts a `Job` needs (a corrupt one, or an older format)."""


def _object(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise JobRecordUnreadable(f"job record: {what} is not an object")
    return value


def _time(value: object) -> float | None:
    """An epoch time as stored (an int stays an int: the record is rewritten as found)."""
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class JobRun:
    """The downstream run a job reported on, read from the callback its record keeps."""

    workflow_name: str
    job_name: str
    run_id: str
    run_attempt: str
    url: str | None
    check_run_id: str | None
    reported_conclusion: str | None
    failed_tests: tuple[str, ...] = ()
    """The failed tests' names the relay kept (bounded on the way in)."""
    failed_total: int = 0
    """How many tests failed: the names kept plus those the reporter dropped."""

    @classmethod
    def of(cls, callback: Mapping[str, Any]) -> JobRun:
        """Read the run from a kept callback (`kept_in_job_record`)."""
        workflow = _object(callback.get("workflow"), "callback.workflow")
        url, check_run_id = workflow.get("url"), workflow.get("check_run_id")
        conclusion = workflow.get("conclusion")
        failed_tests, failed_total = _failed_tests(workflow.get("test_results"))
        return cls(
            workflow_name=str(workflow.get("name") or ""),
            job_name=str(workflow.get("job_name") or ""),
            run_id=str(workflow.get("run_id") or ""),
            run_attempt=str(workflow.get("run_attempt") or "1"),
            url=url if isinstance(url, str) else None,
            check_run_id=str(check_run_id) if check_run_id else None,
            reported_conclusion=conclusion if isinstance(conclusion, str) else None,
            failed_tests=failed_tests,
            failed_total=failed_total,
        )


def _failed_tests(test_results: object) -> tuple[tuple[str, ...], int]:
    if not isinstance(test_results, Mapping):
        return (), 0
    entries = test_results.get("failed_tests")
    names = tuple(
        str(entry["name"])
        for entry in (entries if isinstance(entries, list) else ())
        if isinstance(entry, Mapping) and entry.get("name")
    )
    dropped = test_results.get(DROPPED_KEY)
    return names, len(names) + (dropped if isinstance(dropped, int) else 0)


def kept_in_job_record(callback: Mapping[str, Any]) -> dict[str, Any]:
    """The callback as the job record keeps it: failed tests without their messages.

    The messages (up to 2,000 characters each, a hundred of them) are for the HUD row,
    written from the callback itself; the record needs the names (check-run summaries)
    and enough to redo a lost HUD write, where a row without messages is the price.
    """
    workflow = callback.get("workflow")
    results = workflow.get("test_results") if isinstance(workflow, Mapping) else None
    failed = results.get("failed_tests") if isinstance(results, Mapping) else None
    if not isinstance(failed, list) or not isinstance(workflow, Mapping):
        return dict(callback)
    assert isinstance(results, Mapping)
    trimmed = [
        {k: v for k, v in entry.items() if k != "message"} if isinstance(entry, Mapping) else entry
        for entry in failed
    ]
    return {
        **callback,
        "workflow": {**workflow, "test_results": {**results, "failed_tests": trimmed}},
    }


@dataclass(frozen=True)
class Job:
    """One job (one run attempt of one job of one workflow) as its record holds it.

    Written whole by the in_progress callback, so that the sweeper can write a
    timed_out row and the check publisher a check run without the callback at hand:
    the verified repo, its level when the job started, whose CI ran it (`issuer_kind`:
    only GitHub Actions jobs can be re-run or looked up), the dispatch record it is
    bound to, and the callback as kept (`kept_in_job_record`).
    """

    key: str
    state: JobState
    verified_repo: str
    level: Level
    dispatch: DispatchRecord
    callback: Mapping[str, Any]
    in_progress_at: float | None
    queue_time: float | None
    issuer_kind: str | None = None
    conclusion: str | None = None
    completed_at: float | None = None
    timed_out_at: float | None = None
    unknown: Mapping[str, Any] = field(default_factory=dict)
    """Keys this release does not know, kept as found so that a rewrite loses nothing."""

    @classmethod
    def started(
        cls,
        key: str,
        *,
        verified_repo: str,
        level: Level,
        dispatch: DispatchRecord,
        callback: Mapping[str, Any],
        at: float,
        queue_time: float | None,
        issuer_kind: str,
    ) -> Job:
        """The job an accepted in_progress callback writes."""
        return cls(
            key=key,
            state=JobState.IN_PROGRESS,
            verified_repo=verified_repo,
            level=level,
            dispatch=dispatch,
            callback=kept_in_job_record(callback),
            in_progress_at=at,
            queue_time=queue_time,
            issuer_kind=issuer_kind,
        )

    @cached_property
    def run(self) -> JobRun:
        """The downstream run, from the callback kept last (read once: three hooks ask)."""
        return JobRun.of(self.callback)

    @property
    def execution_time_end(self) -> float | None:
        """When the job stopped running: completed, or timed out by the sweeper."""
        return self.completed_at if self.completed_at is not None else self.timed_out_at

    def to_store(self) -> dict[str, Any]:
        """The record's `data` mapping, key for key as the state store keeps it."""
        data: dict[str, Any] = {
            "status": str(
                ReportedStatus.COMPLETED
                if self.completed_at is not None
                else ReportedStatus.IN_PROGRESS
            ),
            "conclusion": self.conclusion,
            "in_progress_at": self.in_progress_at,
            "queue_time": self.queue_time,
            "verified_repo": self.verified_repo,
            "level": str(self.level),
            "issuer_kind": self.issuer_kind,
            "record": self.dispatch.to_store(),
            "callback": dict(self.callback),
        }
        if self.timed_out_at is not None:
            data["timed_out_at"] = self.timed_out_at
        if self.completed_at is not None:
            data["completed_at"] = self.completed_at
        data.update(self.unknown)
        return data

    def to_record(self) -> JobRecord:
        """The whole record: state and data."""
        return JobRecord(state=str(self.state), data=self.to_store())

    @classmethod
    def from_store(cls, key: str, record: JobRecord) -> Job:
        """Rebuild from a stored record; raise `JobRecordUnreadable` if it lacks the facts."""
        data = record.data
        try:
            state = JobState(record.state)
            level = Level[str(data.get("level"))]
            dispatch = DispatchRecord.from_store(_object(data.get("record"), "record"))
        except (KeyError, ValueError, TypeError) as exc:
            raise JobRecordUnreadable(f"job record {key}: {exc!r}") from None
        callback = _object(data.get("callback"), "callback")
        _object(callback.get("workflow"), "callback.workflow")
        issuer_kind, conclusion = data.get("issuer_kind"), data.get("conclusion")
        return cls(
            key=key,
            state=state,
            verified_repo=str(data.get("verified_repo") or dispatch.repo),
            level=level,
            dispatch=dispatch,
            callback=callback,
            in_progress_at=_time(data.get("in_progress_at")),
            queue_time=_time(data.get("queue_time")),
            issuer_kind=str(issuer_kind) if issuer_kind else None,
            conclusion=str(conclusion) if conclusion is not None else None,
            completed_at=_time(data.get("completed_at")),
            timed_out_at=_time(data.get("timed_out_at")),
            unknown={k: v for k, v in data.items() if k not in _KNOWN_KEYS},
        )

    @classmethod
    def readable(cls, key: str, record: JobRecord | None) -> Job | None:
        """`from_store`, or None for a missing or unreadable record."""
        if record is None:
            return None
        try:
            return cls.from_store(key, record)
        except JobRecordUnreadable:
            return None

    def completed(self, completion: JobCompletion) -> Job:
        """This job once `completion` is merged over its record."""
        return replace(
            self,
            state=JobState.COMPLETED,
            conclusion=completion.conclusion,
            completed_at=completion.completed_at,
            callback=completion.callback,
        )

    def superseded(self, supersession: JobSupersession) -> Job:
        """This job once a newer head's `supersession` is merged over its record."""
        return replace(
            self,
            state=JobState.SUPERSEDED,
            conclusion="cancelled",
            dispatch=supersession.dispatch,
        )

    def timed_out(self, timeout: JobTimeout) -> Job:
        """This job once the sweeper's `timeout` is merged over its record."""
        return replace(
            self, state=JobState.TIMED_OUT, conclusion="timed_out", timed_out_at=timeout.at
        )


@dataclass(frozen=True)
class JobCompletion:
    """What an accepted completed callback merges over its job's record.

    With the in_progress facts under it, enough for the sweeper to rebuild this
    completion's HUD body and hooks should the relay die before it did.
    """

    conclusion: str | None
    completed_at: float
    callback: Mapping[str, Any]

    @classmethod
    def of(cls, conclusion: str | None, at: float, callback: Mapping[str, Any]) -> JobCompletion:
        """The completion of a callback, kept as the record keeps callbacks."""
        return cls(conclusion, at, kept_in_job_record(callback))

    def to_record(self) -> JobRecord:
        """The record the completed transition writes, merged over the job's."""
        return JobRecord(state=str(JobState.COMPLETED), data=self.to_store())

    def to_store(self) -> dict[str, Any]:
        """The keys merged over the record."""
        return {
            "status": str(ReportedStatus.COMPLETED),
            "conclusion": self.conclusion,
            "completed_at": self.completed_at,
            "callback": dict(self.callback),
        }


@dataclass(frozen=True)
class JobTimeout:
    """What the sweeper merges over a zombie's record when it times it out."""

    at: float

    def to_record(self) -> JobRecord:
        """The record the timeout writes, merged over the zombie's."""
        return JobRecord(state=str(JobState.TIMED_OUT), data=self.to_store())

    def to_store(self) -> dict[str, Any]:
        """The keys merged over the record."""
        return {"timed_out_at": self.at, "conclusion": "timed_out"}


@dataclass(frozen=True)
class JobSupersession:
    """What supersession (SPEC §15) merges over a running job's record: its dispatch record
    as closed by the newer head, and the conclusion its check run shows, `cancelled`."""

    dispatch: DispatchRecord

    def to_record(self) -> JobRecord:
        """The record the superseded transition writes, merged over the job's."""
        return JobRecord(state=str(JobState.SUPERSEDED), data=self.to_store())

    def to_store(self) -> dict[str, Any]:
        """The keys merged over the record."""
        return {"conclusion": "cancelled", "record": self.dispatch.to_store()}


def stored_conclusion(record: JobRecord) -> str | None:
    """The conclusion a stored record holds, read without rebuilding the whole job."""
    conclusion = record.data.get("conclusion")
    return None if conclusion is None else str(conclusion)

"""HUD ingestion (SPEC §6): turn a results body into a job report, and store it.

`parse_result_body` is pure: it validates the body and decides where each field comes
from. `trusted` (written by the relay) is authoritative for identity, level and timing;
`trusted.dispatch`, when present (our relay), is authoritative for the upstream context.
Without it (PyTorch's relay) the upstream context comes from the echoed webhook payload,
as the reference HUD reads it.

`HudIngestor` is the one entry point for writes: the HTTP route (and the relay's retry
queue) hand it bodies to `ingest`; the relay in this process hands it the typed report
of a callback its schema already checked with the same rules (`ingest_report`).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from anyio import to_thread
from sqlalchemy import Engine

from crcr.failure_detail.visible_text import visible
from crcr.hud.write.fields import conclusion_problem, run_attempt_number, utc_timestamp
from crcr.hud.write.ingest_detail import DetailRejected, failure_detail
from crcr.hud.write.path_skips import PathSkips, store_path_skips
from crcr.hud.write.report import JobReport
from crcr.hud.write.sqlite_writer import SqliteWriter
from crcr.hud.write.writer import write_reports
from crcr.web.refusal import Invalid
from crcr.web.web_urls import MAX_URL_LENGTH, web_url_problem

NO_PR_EVENTS = frozenset({"push", "nightly", "periodic"})
SELF_REPORT_EVENTS = frozenset({"nightly", "periodic"})
STATUSES = frozenset({"queued", "requested", "waiting", "pending", "in_progress", "completed"})
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_SHA = re.compile(r"^[0-9a-fA-F]{7,64}$")
log = logging.getLogger(__name__)
# The columns' bounds (SQL INTEGER; seconds as REAL): past them a write failed as a 500.
MAX_INTEGER = 2**31 - 1
MAX_SECONDS = 1e9

MAX_BATCH = 64  # reports per transaction: bounds how long one commit holds the writer


@dataclass(frozen=True)
class IngestResult:
    """What a write did: `created` a row, `updated` it, or found it `unchanged`."""

    outcome: str
    job_key: str


def _object(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise Invalid(f"{path} must be an object")
    return value


def _integral(value: Any) -> Any:
    """An integral float as its integer: JSON (and JSON Schema, which the API document
    uses) reads `5.0` as `5`; anything else as it is."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)  # past 2**53 a float no longer holds the integer written
    return value


def _text(
    source: Mapping[str, Any], key: str, path: str, *, max_len: int, required: bool = True
) -> str | None:
    value = _integral(source.get(key))
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if value is None or value == "":
        if required:
            raise Invalid(f"{path}.{key} is required")
        return None
    if not isinstance(value, str):
        raise Invalid(f"{path}.{key} must be a string")
    if len(value) > max_len:
        raise Invalid(f"{path}.{key} is longer than {max_len} characters")
    return value


def _required(source: Mapping[str, Any], key: str, path: str, *, max_len: int) -> str:
    value = _text(source, key, path, max_len=max_len)
    assert value is not None  # _text raises when a required value is missing
    return value


def _number(source: Mapping[str, Any], key: str, path: str) -> float | None:
    value = source.get(key)
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0 <= value <= MAX_SECONDS
    ):
        raise Invalid(
            f"{path}.{key} must be a number of seconds from 0 to {MAX_SECONDS:g}, or null"
        )
    return float(value)


def _count(source: Mapping[str, Any], key: str, path: str) -> int | None:
    value = _integral(source.get(key))
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_INTEGER:
        raise Invalid(f"{path}.{key} must be an integer from 0 to {MAX_INTEGER}")
    return value


def _timestamp(source: Mapping[str, Any], key: str, path: str) -> datetime | None:
    value = source.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise Invalid(f"{path}.{key} must be an ISO-8601 string or null")
    try:
        return utc_timestamp(value)
    except ValueError as exc:
        raise Invalid(f"{path}.{key} {exc}") from None


def _pr_number(value: Any, path: str) -> int:
    value = _integral(value)
    if value is None:
        return 0
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 9:
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_INTEGER:
        raise Invalid(f"{path} must be an integer from 0 to {MAX_INTEGER}")
    return value


def _upstream_context(
    trusted: Mapping[str, Any], callback: Mapping[str, Any], delivery_id: str
) -> tuple[str, str, int, str]:
    """(upstream repo, event type, PR number, head SHA), trusted dispatch first."""
    if trusted.get("dispatch") is not None:
        dispatch = _object(trusted["dispatch"], "trusted.dispatch")
        path = "trusted.dispatch"
        upstream = _required(dispatch, "upstream_repo", path, max_len=200)
        event_type = _required(dispatch, "event_type", path, max_len=40)
        pr_number = _pr_number(dispatch.get("pr_number"), f"{path}.pr_number")
        head_sha = _text(dispatch, "head_sha", path, max_len=64, required=False) or ""
        if not head_sha and event_type in SELF_REPORT_EVENTS:
            head_sha = delivery_id[:64]
        return upstream, event_type, pr_number, head_sha
    path = "untrusted.callback_payload"
    event_type = _required(callback, "event_type", path, max_len=40)
    raw = callback.get("payload")
    payload = _object(raw, f"{path}.payload") if raw is not None else {}
    repository = payload.get("repository")
    upstream = ""
    if isinstance(repository, Mapping) and isinstance(repository.get("full_name"), str):
        upstream = repository["full_name"][:200]
    pr = payload.get("pull_request")
    pr_number, head_sha = 0, ""
    if isinstance(pr, Mapping):
        pr_number = _pr_number(pr.get("number"), f"{path}.payload.pull_request.number")
        head = pr.get("head")
        if isinstance(head, Mapping) and isinstance(head.get("sha"), str):
            head_sha = head["sha"]
    elif isinstance(payload.get("after"), str):
        head_sha = payload["after"]
    if event_type in NO_PR_EVENTS:
        pr_number = 0
    if not head_sha and event_type in SELF_REPORT_EVENTS:
        head_sha = delivery_id
    return upstream, event_type, pr_number, head_sha[:64]


def _link(source: Mapping[str, Any], key: str, path: str, *, allow_http: bool) -> str | None:
    """A link the pages may render, or None: an unsafe one is dropped, the row kept.

    Another relay (PyTorch's) may pass a downstream's link on unchecked; losing the
    result over it would punish the wrong party, rendering it would endanger viewers.
    """
    value = _text(source, key, path, max_len=MAX_URL_LENGTH, required=False)
    if value is None:
        return None
    problem = web_url_problem(value, allow_http=allow_http)
    if problem is not None:
        log.warning("dropped %s.%s from a result: %s", path, key, problem)
        return None
    return value


def parse_result_body(body: Any, *, allow_http: bool = False) -> JobReport:
    """Validate a §6 body and map it to a job report; raises `Invalid` (400).

    `allow_http` keeps `http://` links (the sandbox); otherwise only `https://` ones.
    """
    body = _object(body, "body")
    trusted = _object(body.get("trusted"), "trusted")
    untrusted = _object(body.get("untrusted"), "untrusted")
    callback = _object(untrusted.get("callback_payload"), "untrusted.callback_payload")
    workflow = _object(callback.get("workflow"), "untrusted.callback_payload.workflow")
    wf = "untrusted.callback_payload.workflow"

    repo = _required(trusted, "verified_repo", "trusted", max_len=200)
    if not _REPO.match(repo):
        raise Invalid("trusted.verified_repo must be of the form owner/repo")
    level = _text(trusted, "downstream_repo_level", "trusted", max_len=8, required=False)
    metrics_raw = trusted.get("ci_metrics")
    metrics = _object(metrics_raw, "trusted.ci_metrics") if metrics_raw is not None else {}

    delivery_id = _required(callback, "delivery_id", "untrusted.callback_payload", max_len=200)
    upstream, event_type, pr_number, head_sha = _upstream_context(trusted, callback, delivery_id)

    status = _required(workflow, "status", wf, max_len=20)
    if status not in STATUSES:
        raise Invalid(f"{wf}.status must be one of {', '.join(sorted(STATUSES))}")
    conclusion = _text(workflow, "conclusion", wf, max_len=30, required=False)
    if conclusion is not None and (problem := conclusion_problem(conclusion)):
        raise Invalid(f"{wf}.conclusion {problem}")
    expected = _text(workflow, "expected_conclusion", wf, max_len=30, required=False)
    if expected is not None and (problem := conclusion_problem(expected)):
        raise Invalid(f"{wf}.expected_conclusion {problem}")
    attempt_text = _text(workflow, "run_attempt", wf, max_len=9, required=False) or "1"
    try:
        run_attempt = run_attempt_number(attempt_text)
    except ValueError as exc:
        raise Invalid(f"{wf}.run_attempt {exc}") from None

    results_raw = workflow.get("test_results")
    results = _object(results_raw, f"{wf}.test_results") if results_raw is not None else {}
    tr = f"{wf}.test_results"
    passed, failed, skipped = (_count(results, k, tr) for k in ("passed", "failed", "skipped"))
    total = _count(results, "total", tr)
    if total is None and results:
        total = sum(n for n in (passed, failed, skipped) if n is not None)
    try:
        detail = failure_detail(trusted, workflow, results)
    except DetailRejected as exc:
        raise Invalid(str(exc)) from None

    superseded_by = _text(trusted, "superseded_by", "trusted", max_len=64, required=False)
    if superseded_by is not None and not _SHA.match(superseded_by):
        raise Invalid("trusted.superseded_by must be a commit SHA (7 to 64 hex characters)")

    return JobReport(
        downstream_repo=repo,
        downstream_repo_level=level,
        upstream_repo=upstream,
        event_type=event_type,
        pr_number=pr_number,
        head_sha=head_sha,
        delivery_id=delivery_id,
        # Shown on the pages: invisible format characters (bidi overrides) are dropped, as
        # the relay drops them; a body from another relay may still carry them.
        workflow_name=visible(_required(workflow, "name", wf, max_len=300)),
        job_name=visible(_text(workflow, "job_name", wf, max_len=300, required=False) or ""),
        run_id=_required(workflow, "run_id", wf, max_len=40),
        run_attempt=run_attempt,
        check_run_id=_text(workflow, "check_run_id", wf, max_len=40, required=False) or "",
        status=status,
        conclusion=conclusion,
        started_at=_timestamp(workflow, "started_at", wf),
        completed_at=_timestamp(workflow, "completed_at", wf),
        queue_time=_number(metrics, "queue_time", "trusted.ci_metrics"),
        execution_time=_number(metrics, "execution_time", "trusted.ci_metrics"),
        passed=passed,
        failed=failed,
        skipped=skipped,
        total_tests=total,
        workflow_run_url=_link(workflow, "url", wf, allow_http=allow_http),
        artifact_url=_link(workflow, "artifact_url", wf, allow_http=allow_http),
        failed_tests=detail.failed_tests,
        triage_verdict=detail.triage_verdict,
        confirmed=detail.confirmed,
        github_conclusion=detail.github_conclusion,
        expected_conclusion=expected,
        superseded_by=superseded_by,
    )


class HudIngestor:
    """Validate and store results bodies; writes run in a worker thread, in batches.

    Under load, bodies that arrive while a batch is being written are written together
    in the next transaction (a group commit): one thread hand-off and one commit for
    many callbacks instead of one each, and no queue of threads contending for
    SQLite's single writer. A lone body is written at once, as before. On SQLite,
    `hold_connection` keeps the writer's connection across batches (`SqliteWriter`): the
    caller then owes a `close`.
    """

    def __init__(
        self,
        engine: Engine,
        clock: Callable[[], datetime] | None = None,
        *,
        max_batch: int = MAX_BATCH,
        allow_http: bool = False,
        hold_connection: bool = False,
    ) -> None:
        self._engine = engine
        self._allow_http = allow_http
        self._clock = clock or (lambda: datetime.now(UTC))
        self._max_batch = max_batch
        self._pending: list[tuple[JobReport, datetime, asyncio.Future[str]]] = []
        self._writer: asyncio.Task[None] | None = None
        sqlite = engine.dialect.name == "sqlite"
        self._sqlite = SqliteWriter(engine, hold_connection=hold_connection) if sqlite else None

    async def ingest(self, body: Mapping[str, Any]) -> IngestResult:
        """Store one §6 body; raises `Invalid` for a body the HUD refuses."""
        return await self.ingest_report(parse_result_body(body, allow_http=self._allow_http))

    async def ingest_report(self, report: JobReport) -> IngestResult:
        """Store one report the relay in this process built from a callback it checked.

        Its fields already passed the HUD's rules (`fields`, `crcr.failure_detail`) in the
        relay's schema, so there is nothing left to parse.
        """
        outcome: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._pending.append((report, self._clock(), outcome))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_pending())
        # Shielded: a caller that stops waiting does not stop the write of its batch.
        return IngestResult(outcome=await asyncio.shield(outcome), job_key=report.job_key)

    async def ingest_received(
        self, bodies: Sequence[tuple[Mapping[str, Any], datetime]], *, batch: int = 500
    ) -> int:
        """Store §6 bodies received at the given past times (a backfill); the number stored.

        The same checks and write path as `ingest`, in large batches: the demo's history
        of a fortnight is thousands of bodies, and one commit each would take a while.
        """
        reports = [(parse_result_body(body), received) for body, received in bodies]
        for start in range(0, len(reports), batch):
            for result in await self._write(reports[start : start + batch]):
                if isinstance(result, Exception):
                    raise result
        return len(reports)

    async def record_path_skips(self, skips: PathSkips) -> int:
        """Keep a PR head's path-skipped backends (SPEC §15)."""
        return await store_path_skips(self._engine, skips, self._clock())

    async def _write(self, reports: list[tuple[JobReport, datetime]]) -> list[str | Exception]:
        """Write one batch: on SQLite in the event loop's thread (`SqliteWriter`), elsewhere
        in a worker thread."""
        if self._sqlite is None:
            return await to_thread.run_sync(write_reports, self._engine, reports)
        async with self._sqlite.turn() as connection:
            return write_reports(self._engine, reports, locked=True, connection=connection)

    async def close(self) -> None:
        """Let a running WAL checkpoint finish; give a held connection back."""
        if self._sqlite is not None:
            await self._sqlite.close()

    async def _write_pending(self) -> None:
        while self._pending:
            batch = self._pending[: self._max_batch]
            del self._pending[: self._max_batch]
            reports = [(report, now) for report, now, _ in batch]
            try:
                results = await self._write(reports)
            except BaseException as exc:  # the hand-off itself failed, or shutdown
                for _, _, outcome in batch:
                    if not outcome.done():
                        outcome.set_exception(RuntimeError(f"HUD write interrupted: {exc!r}"))
                raise
            for (_, _, outcome), result in zip(batch, results, strict=True):
                if outcome.done():
                    continue
                if isinstance(result, Exception):
                    outcome.set_exception(result)
                else:
                    outcome.set_result(result)

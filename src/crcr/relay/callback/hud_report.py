"""The typed HUD row of an accepted callback, for the HUD running in this process.

The relay's schema checked the body with the HUD's own rules, so the in-process HUD is
handed the report itself instead of a SPEC §6 body to parse again (`parse_result_body`
guards the HTTP route and the retry queue). Both roads must store the same row:
`tests/relay/callback/test_hud_report.py` holds this mapping to what
`parse_result_body` makes of the body the relay would have sent.
"""

from __future__ import annotations

from typing import Any

from crcr.failure_detail.failed_tests import DROPPED_KEY
from crcr.hud.write.fields import run_attempt_number, utc_timestamp
from crcr.hud.write.ingest_detail import compact_json
from crcr.hud.write.report import JobReport
from crcr.relay.callback.schema import ParsedCallback
from crcr.relay.jobs.dispatch import UpstreamContext

_COUNTS = ("passed", "failed", "skipped")


def hud_report(
    callback: ParsedCallback,
    *,
    verified_repo: str,
    level: str,
    context: UpstreamContext,
    queue_time: float | None,
    execution_time: float | None,
    superseded_by: str | None = None,
) -> JobReport:
    """The row a results body for this callback would give; `context` is the dispatch's
    upstream (for a self-report, the tested commit)."""
    workflow = callback.body.workflow
    # As kept and forwarded: unset counts stay None, and detail is the schema's sanitised
    # copy (`crcr.failure_detail`), not sanitised again.
    kept: dict[str, Any] = callback.without_payload["workflow"]
    results: dict[str, Any] = kept.get("test_results") or {}
    passed, failed, skipped = (results.get(name) for name in _COUNTS)
    total = sum(n for n in (passed, failed, skipped) if n is not None) if results else None
    return JobReport(
        downstream_repo=verified_repo,
        downstream_repo_level=level,
        upstream_repo=context.upstream_repo,
        event_type=context.event_type,
        pr_number=context.pr_number or 0,
        head_sha=context.head_sha,
        delivery_id=callback.body.delivery_id,
        workflow_name=workflow.name,
        job_name=workflow.job_name,
        run_id=workflow.run_id,
        run_attempt=run_attempt_number(workflow.run_attempt),
        check_run_id=workflow.check_run_id or "",
        status=str(workflow.status),
        conclusion=workflow.conclusion or None,
        started_at=utc_timestamp(workflow.started_at) if workflow.started_at else None,
        completed_at=utc_timestamp(workflow.completed_at) if workflow.completed_at else None,
        queue_time=queue_time,
        execution_time=execution_time,
        passed=passed,
        failed=failed,
        skipped=skipped,
        total_tests=total,
        workflow_run_url=workflow.url,
        artifact_url=workflow.artifact_url,
        failed_tests=_failed_tests(results),
        triage_verdict=compact_json(kept["triage_verdict"]) if "triage_verdict" in kept else None,
        expected_conclusion=workflow.expected_conclusion,
        superseded_by=superseded_by,
    )


def _failed_tests(results: dict[str, Any]) -> str | None:
    """The failed tests as the row keeps them. The schema bounded them already (with the
    same `crcr.failure_detail`), so they are not bounded a second time."""
    if "failed_tests" not in results:
        return None
    return compact_json({"tests": results["failed_tests"], "dropped": results.get(DROPPED_KEY, 0)})

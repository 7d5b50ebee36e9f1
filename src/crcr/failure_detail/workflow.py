"""Apply both bounds to a callback's `workflow` object, as relay and HUD each do."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crcr.failure_detail.failed_tests import bound_test_results
from crcr.failure_detail.triage_verdict import sanitise_triage_verdict


def sanitise_failure_detail(workflow: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`workflow` with bounded `failed_tests` and a sanitised (or removed) `triage_verdict`.

    Returns the new object and the reasons anything was dropped whole, for a log line:
    neither problem refuses the callback, since both fields are advisory.
    """
    result = dict(workflow)
    problems: list[str] = []
    test_results = result.get("test_results")
    if isinstance(test_results, Mapping):
        result["test_results"], problem = bound_test_results(test_results)
        if problem is not None:
            problems.append(f"test_results.{problem}")
    if "triage_verdict" in result:
        checked = sanitise_triage_verdict(result.pop("triage_verdict"))
        if checked.verdict is not None:
            result["triage_verdict"] = checked.verdict
        elif checked.reason is not None:
            problems.append(checked.reason)
    return result, problems

"""Failure detail in a results body (SPEC §11): re-checked with the relay's own rules, kept as JSON.

The HUD also takes bodies from relays other than ours, so what a downstream claims about
its failures is bounded and sanitised again here with the same pure functions the relay
uses (`crcr.failure_detail`). A list or verdict that does not pass is left out; the job
result itself is still stored, as the relay accepts the callback that carried it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crcr.failure_detail.failed_tests import DROPPED_KEY, bound_test_results
from crcr.failure_detail.triage_verdict import sanitise_triage_verdict

_CONCLUSION_MAX = 30


class DetailRejected(ValueError):
    """A trusted field of the failure detail has the wrong shape; the message names it."""


@dataclass(frozen=True)
class FailureDetail:
    """What a body says beyond the §6 row fields; None where it says nothing."""

    failed_tests: str | None
    triage_verdict: str | None
    confirmed: bool | None
    github_conclusion: str | None


def compact_json(value: Any) -> str:
    """JSON text as the row keeps failure detail: no spaces, characters as they are."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def failed_tests_json(test_results: Mapping[str, Any]) -> str | None:
    """`{"tests": [...], "dropped": n}` as JSON text, or None when the body sent no list."""
    if "failed_tests" not in test_results:
        return None
    bounded, refused = bound_test_results(test_results)
    if refused is not None:
        return None
    dropped = bounded.get(DROPPED_KEY, 0)
    return compact_json({"tests": bounded["failed_tests"], "dropped": dropped})


def triage_verdict_json(workflow: Mapping[str, Any]) -> str | None:
    """The sanitised verdict as JSON text, or None when absent or dropped."""
    verdict = sanitise_triage_verdict(workflow.get("triage_verdict")).verdict
    return None if verdict is None else compact_json(verdict)


def _confirmation(trusted: Mapping[str, Any]) -> tuple[bool | None, str | None]:
    """`trusted.confirmed` and `trusted.confirmation.github_conclusion` (relay-written)."""
    confirmed = trusted.get("confirmed")
    if confirmed is not None and not isinstance(confirmed, bool):
        raise DetailRejected("trusted.confirmed must be true, false or absent")
    confirmation = trusted.get("confirmation")
    if confirmation is None:
        return confirmed, None
    if not isinstance(confirmation, Mapping):
        raise DetailRejected("trusted.confirmation must be an object")
    conclusion = confirmation.get("github_conclusion")
    if conclusion is not None and (
        not isinstance(conclusion, str) or not 0 < len(conclusion) <= _CONCLUSION_MAX
    ):
        raise DetailRejected(
            f"trusted.confirmation.github_conclusion must be a string of at most "
            f"{_CONCLUSION_MAX} characters or null"
        )
    return confirmed, conclusion


def failure_detail(
    trusted: Mapping[str, Any], workflow: Mapping[str, Any], test_results: Mapping[str, Any]
) -> FailureDetail:
    """The failure detail of one body; raises `DetailRejected` for a malformed trusted part."""
    confirmed, github_conclusion = _confirmation(trusted)
    return FailureDetail(
        failed_tests=failed_tests_json(test_results),
        triage_verdict=triage_verdict_json(workflow),
        confirmed=confirmed,
        github_conclusion=github_conclusion,
    )

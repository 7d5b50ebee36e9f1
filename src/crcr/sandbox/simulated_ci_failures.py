"""What a simulated job's failure looks like: failed test names and a triage verdict (pure).

So that the demo's HUD shows SPEC §11 at work: a job with `broken_tests` fails on every
run, on the upstream's main branch too (the HUD's baseline calls it already failing);
other failures name tests drawn from the job's `test_names` (new, or flaky when they
pass on re-run); workflows with `triage` attach the verdict an analyzer would write.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

TRIAGE_SUMMARIES = {
    "upstream": "The failing op's dispatch changed upstream; our kernel registration lags.",
    "backend": "Our kernel for this op is wrong on this device; a fix is under review.",
    "infra": "The runner lost its device mid-test; nothing to do with the change.",
    "flake": "A timing-dependent test; it passes when run again.",
}


@dataclass(frozen=True)
class FailureDetail:
    """The tests a failed job names and the verdict it attaches (None when it sends none)."""

    failed_tests: tuple[str, ...] = ()
    triage_verdict: dict[str, Any] | None = None


def plan_failure(
    *,
    failed: bool,
    broken_tests: tuple[str, ...],
    test_names: tuple[str, ...],
    triage: bool,
    rng: random.Random,
) -> FailureDetail:
    """The detail of one planned job; draws from `rng` only for jobs that use the feature."""
    if not failed:
        return FailureDetail()
    names = list(broken_tests)
    if test_names and not broken_tests:
        names += rng.sample(test_names, k=min(len(test_names), rng.randint(1, 2)))
    verdict = None
    if triage:
        category = "backend" if broken_tests else rng.choice(sorted(TRIAGE_SUMMARIES))
        verdict = {
            "schema_version": 1,
            "category": category,
            "confidence": rng.choice(("high", "medium", "low")),
            "summary": TRIAGE_SUMMARIES[category],
            "evidence": [{"test": name} for name in names[:3]],
            "reproduced_on_retry": category not in ("flake", "infra"),
            "analyzer": {"name": "demo-triage", "version": "1.0"},
        }
    return FailureDetail(tuple(names), verdict)
